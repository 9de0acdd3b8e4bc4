'use strict';

const { decodeComponent, encodeComponent } = require('./decode.js');

/**
 * Parse a query string such as '?page=2&tag=js&tag=node' into an object.
 *
 * - a leading '?' is ignored, and so are empty pieces ('a=1&&b=2&');
 * - keys and values are decoded ('+' is a space, %XX escapes; a malformed
 *   escape is kept as written);
 * - a piece without '=' is a key with the value ''; a value may itself
 *   contain '=' (only the first one separates the key);
 * - a key given once maps to its string value; a key given several times
 *   maps to an array of all its values, in order (what stringifyQuery writes
 *   for an array);
 * - the result has no prototype, so keys such as 'constructor' or
 *   'toString' are ordinary keys.
 */
function parseQuery(input) {
  const result = Object.create(null);
  let qs = input == null ? '' : String(input);
  if (qs.startsWith('?')) {
    qs = qs.slice(1);
  }
  for (const piece of qs.split('&')) {
    if (piece === '') {
      continue;
    }
    const eq = piece.indexOf('=');
    const key = decodeComponent(eq === -1 ? piece : piece.slice(0, eq));
    const value = eq === -1 ? '' : decodeComponent(piece.slice(eq + 1));
    result[key] = value;
  }
  return result;
}

/**
 * The inverse of parseQuery: an array value is written as one 'key=value'
 * piece per element; undefined values are left out.
 */
function stringifyQuery(params) {
  const pieces = [];
  for (const key of Object.keys(params)) {
    const value = params[key];
    if (value === undefined) {
      continue;
    }
    const values = Array.isArray(value) ? value : [value];
    for (const item of values) {
      pieces.push(`${encodeComponent(key)}=${encodeComponent(item)}`);
    }
  }
  return pieces.join('&');
}

module.exports = { parseQuery, stringifyQuery };
