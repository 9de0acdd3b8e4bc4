'use strict';

const { parse } = require('./parse.js');

function cmp(x, y) {
  if (x < y) {
    return -1;
  }
  return x > y ? 1 : 0;
}

/**
 * Precedence of two pre-release identifier lists (semver 2.0.0, item 11):
 * an empty list (a release) ranks above any pre-release; identifiers are
 * compared left to right, numeric ones numerically, alphanumeric ones in
 * ASCII order, numeric below alphanumeric; when all shared identifiers are
 * equal, the longer list ranks higher.
 */
function comparePrerelease(a, b) {
  if (!a.length || !b.length) {
    // a release (no identifiers) ranks above any pre-release of it
    return cmp(b.length, a.length);
  }
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (i >= a.length) {
      return -1;
    }
    if (i >= b.length) {
      return 1;
    }
    const order = cmp(a[i], b[i]);
    if (order !== 0) {
      return order;
    }
  }
  return 0;
}

/** -1, 0 or 1 as version a ranks below, equal to or above b; build metadata is ignored. */
function compare(a, b) {
  const x = parse(a);
  const y = parse(b);
  return (
    cmp(x.major, y.major) ||
    cmp(x.minor, y.minor) ||
    cmp(x.patch, y.patch) ||
    comparePrerelease(x.prerelease, y.prerelease)
  );
}

const gt = (a, b) => compare(a, b) > 0;
const lt = (a, b) => compare(a, b) < 0;
const eq = (a, b) => compare(a, b) === 0;

/** A new array of the versions in ascending order; the input array is left as it is. */
function sort(versions) {
  return [...versions].sort(compare);
}

function max(versions) {
  return versions.reduce((best, v) => (best === undefined || gt(v, best) ? v : best), undefined);
}

module.exports = { compare, comparePrerelease, gt, lt, eq, sort, max };
