'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');

const { parse, format } = require('../src/index.js');

test('parses core, pre-release and build', () => {
  assert.deepEqual(parse('1.4.2-beta.3+exp.sha.5114f85'), {
    major: 1,
    minor: 4,
    patch: 2,
    prerelease: ['beta', '3'],
    build: ['exp', 'sha', '5114f85'],
  });
});

test('accepts a leading v', () => {
  assert.equal(parse('v2.0.0').major, 2);
});

test('rejects invalid versions', () => {
  assert.throws(() => parse('1.2'), TypeError);
  assert.throws(() => parse('01.2.3'), TypeError);
  assert.throws(() => parse('1.2.3-01'), TypeError);
});

test('formats a parsed version', () => {
  assert.equal(format('v1.0.0-rc.1+build.7'), '1.0.0-rc.1+build.7');
});
