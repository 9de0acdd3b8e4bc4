'use strict';

// Generated tests for verkit.compare.

const test = require('node:test');
const assert = require('node:assert/strict');

const { compare, sort } = require('../src/index.js');

test('alpha.10 ranks above alpha.2', () => {
  assert.equal(compare('1.0.0-alpha.10', '1.0.0-alpha.2'), 1);
});

test('rc.9 sorts before rc.10', () => {
  assert.deepEqual(sort(['1.0.0-rc.10', '1.0.0-rc.9']), ['1.0.0-rc.10', '1.0.0-rc.9']);
});

test('pre-release below release', () => {
  assert.equal(compare('1.0.0-rc.1', '1.0.0'), -1);
});
