#!/bin/bash
# Relative paths: testprism runs this from the program root (/app in the Harbor image).
cat > greet.py <<'PY'
def greet(name):
    return f"Hello, {name or 'World'}!"
PY
