'use strict';

// Generated tests for verkit.compare.

const test = require('node:test');
const assert = require('node:assert/strict');

const { compare, sort } = require('../src/index.js');
const { compareIdentifiers, comparePrerelease } = require('../src/compare.js');

test('alpha.10 ranks above alpha.2', () => {
  assert.equal(compare('1.0.0-alpha.10', '1.0.0-alpha.2'), 1);
});

test('compareIdentifiers orders numbers numerically', () => {
  assert.equal(compareIdentifiers('10', '9'), 1);
  assert.equal(compareIdentifiers('1', 'beta'), -1);
  assert.equal(compareIdentifiers('rc', 'rc'), 0);
});

test('comparePrerelease delegates to compareIdentifiers', () => {
  assert.equal(comparePrerelease(['rc', '10'], ['rc', '9']), 1);
});

test('invalid versions raise the documented message', () => {
  assert.throws(() => compare('1.2', '1.2.0'), { name: 'TypeError', message: 'Invalid version: 1.2' });
});

test('sort orders release candidates', () => {
  assert.deepEqual(sort(['1.0.0-rc.10', '1.0.0-rc.9', '1.0.0']), ['1.0.0-rc.9', '1.0.0-rc.10', '1.0.0']);
});

test('pre-release below release', () => {
  assert.equal(compare('1.0.0-rc.1', '1.0.0'), -1);
});
