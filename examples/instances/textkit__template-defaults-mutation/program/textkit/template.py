"""Tiny ``${name}`` template substitution."""


def render(template, context, defaults=None):
    """Return ``template`` with every ``${name}`` placeholder replaced.

    Values are looked up in ``context`` first and then in ``defaults`` (if
    given), and converted with ``str()``.  ``$$`` produces a literal ``$``;
    a ``$`` that is not followed by ``{`` or ``$`` is copied unchanged.  A
    placeholder whose name is in neither mapping raises ``KeyError`` naming
    the placeholder.
    """
    if defaults:
        for key, value in defaults.items():
            context.setdefault(key, value)
    out = []
    i = 0
    n = len(template)
    while i < n:
        ch = template[i]
        if ch == "$" and i + 1 < n:
            nxt = template[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "{":
                end = template.find("}", i + 2)
                if end == -1:
                    raise ValueError(f"unterminated placeholder at position {i}")
                name = template[i + 2:end].strip()
                out.append(str(context[name]))
                i = end + 1
                continue
        out.append(ch)
        i += 1
    return "".join(out)
