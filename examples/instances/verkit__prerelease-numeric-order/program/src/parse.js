'use strict';

// MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD] as in https://semver.org (2.0.0): numeric parts and
// numeric pre-release identifiers have no leading zeros; identifiers are [0-9A-Za-z-]+.
const NUM = '0|[1-9]\\d*';
const IDENT = `(?:${NUM}|\\d*[A-Za-z-][0-9A-Za-z-]*)`;
const VERSION = new RegExp(
  `^v?(${NUM})\\.(${NUM})\\.(${NUM})` +
    `(?:-(${IDENT}(?:\\.${IDENT})*))?` +
    `(?:\\+([0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*))?$`,
);

/**
 * Parse a version string into { major, minor, patch, prerelease, build }.
 * prerelease and build are arrays of identifier strings ([] when absent).
 * Throws TypeError for anything that is not a valid semantic version.
 */
function parse(version) {
  if (typeof version === 'object' && version !== null && 'major' in version) {
    return version;
  }
  const match = VERSION.exec(String(version).trim());
  if (!match) {
    throw new TypeError(`Invalid version: ${version}`);
  }
  const [, major, minor, patch, pre, build] = match;
  return {
    major: Number(major),
    minor: Number(minor),
    patch: Number(patch),
    prerelease: pre ? pre.split('.') : [],
    build: build ? build.split('.') : [],
  };
}

function format(v) {
  const parsed = parse(v);
  let text = `${parsed.major}.${parsed.minor}.${parsed.patch}`;
  if (parsed.prerelease.length) {
    text += `-${parsed.prerelease.join('.')}`;
  }
  if (parsed.build.length) {
    text += `+${parsed.build.join('.')}`;
  }
  return text;
}

module.exports = { parse, format };
