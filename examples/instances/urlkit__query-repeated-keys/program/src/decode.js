'use strict';

/**
 * Decode one key or value of an application/x-www-form-urlencoded string:
 * '+' is a space and %XX escapes are decoded. A malformed escape ('100%',
 * '%zz', a broken UTF-8 sequence) is kept exactly as written instead of
 * throwing, so a hand-typed URL never crashes the parser.
 */
function decodeComponent(text) {
  const spaced = text.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch (err) {
    if (err instanceof URIError) {
      return spaced;
    }
    throw err;
  }
}

/** Encode a key or value; spaces become '+'. */
function encodeComponent(text) {
  return encodeURIComponent(String(text)).replace(/%20/g, '+');
}

module.exports = { decodeComponent, encodeComponent };
