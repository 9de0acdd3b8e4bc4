'use strict';

/** Collapse '.' and '..' segments and repeated slashes of a URL path. */
function normalizePath(path) {
  const absolute = path.startsWith('/');
  const out = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') {
      continue;
    }
    if (segment === '..') {
      if (out.length && out[out.length - 1] !== '..') {
        out.pop();
      } else if (!absolute) {
        out.push('..');
      }
      continue;
    }
    out.push(segment);
  }
  const joined = out.join('/');
  const trailing = path.length > 1 && path.endsWith('/') && joined !== '' ? '/' : '';
  return (absolute ? '/' : '') + joined + trailing;
}

/** Join URL path parts with exactly one '/' between them, then normalise. */
function joinPath(...parts) {
  return normalizePath(parts.filter((part) => part !== '').join('/'));
}

module.exports = { joinPath, normalizePath };
