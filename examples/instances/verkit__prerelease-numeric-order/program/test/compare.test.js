'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');

const { compare, gt, lt, sort, max } = require('../src/index.js');

test('compares core versions numerically', () => {
  assert.equal(compare('1.10.0', '1.9.0'), 1);
  assert.equal(compare('2.0.0', '2.0.0'), 0);
  assert.equal(compare('0.0.9', '0.1.0'), -1);
});

test('a pre-release ranks below its release', () => {
  assert.ok(lt('1.0.0-rc.1', '1.0.0'));
  assert.ok(gt('1.0.1-alpha', '1.0.0'));
});

test('sorts alphabetic pre-releases', () => {
  assert.deepEqual(sort(['1.0.0', '1.0.0-beta', '1.0.0-alpha']), ['1.0.0-alpha', '1.0.0-beta', '1.0.0']);
});

test('max picks the highest', () => {
  assert.equal(max(['1.2.0', '1.10.0', '1.9.9']), '1.10.0');
});
