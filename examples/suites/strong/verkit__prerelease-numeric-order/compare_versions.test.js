'use strict';

// Generated tests for verkit.compare / sort: semver 2.0.0 pre-release precedence.

const test = require('node:test');
const assert = require('node:assert/strict');

const { compare, sort, max } = require('../src/index.js');

function assertBelow(a, b) {
  assert.equal(compare(a, b), -1, `${a} should rank below ${b}`);
  assert.equal(compare(b, a), 1, `${b} should rank above ${a}`);
}

test('issue example: alpha.2 below alpha.10', () => {
  assertBelow('1.0.0-alpha.2', '1.0.0-alpha.10');
});

test('issue example: rc.9 sorts before rc.10', () => {
  assert.deepEqual(sort(['1.0.0-rc.10', '1.0.0-rc.9']), ['1.0.0-rc.9', '1.0.0-rc.10']);
  assert.equal(max(['1.0.0-rc.9', '1.0.0-rc.10', '1.0.0-rc.2']), '1.0.0-rc.10');
});

test('bare numeric identifiers by value', () => {
  assertBelow('1.0.0-9', '1.0.0-10');
  assertBelow('1.0.0-0', '1.0.0-1');
  assertBelow('1.0.0-x.7.99', '1.0.0-x.7.100');
});

test('equal numeric identifiers are equal', () => {
  assert.equal(compare('1.0.0-rc.10', '1.0.0-rc.10'), 0);
});

test('semver.org example order', () => {
  const ordered = ['1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta',
    '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0'];
  for (let i = 0; i + 1 < ordered.length; i++) {
    assertBelow(ordered[i], ordered[i + 1]);
  }
  assert.deepEqual(sort([...ordered].reverse()), ordered);
});

test('digits with letters are text', () => {
  assertBelow('1.0.0-20', '1.0.0-1e1');
  assertBelow('1.0.0-rc.9', '1.0.0-rc.0x1');
  assertBelow('1.0.0-2a', '1.0.0-3a');
  assertBelow('1.0.0-10a', '1.0.0-2a');
});

test('core numbers compare numerically', () => {
  assertBelow('1.9.0', '1.10.0');
  assertBelow('1.2.9', '1.2.10');
  assertBelow('9.9.9', '10.0.0');
  assert.equal(compare('v1.2.3', '1.2.3'), 0);
});

test('pre-release below its release', () => {
  assertBelow('1.0.0-rc.1', '1.0.0');
  assertBelow('1.0.0-0', '1.0.0');
  assertBelow('2.0.0-alpha.1.2.3', '2.0.0');
});

test('pre-release of a later version above an earlier release', () => {
  assertBelow('1.0.0', '1.0.1-alpha');
});

test('numeric identifier below alphanumeric', () => {
  assertBelow('1.0.0-alpha.1', '1.0.0-alpha.beta');
  assertBelow('1.0.0-999', '1.0.0-a');
});

test('longer identifier list ranks higher', () => {
  assertBelow('1.0.0-alpha', '1.0.0-alpha.1');
  assertBelow('1.0.0-alpha.beta', '1.0.0-alpha.beta.gamma');
});

test('ascii order for text identifiers', () => {
  assertBelow('1.0.0-RC.1', '1.0.0-rc.1');
  assertBelow('1.0.0-Zeta', '1.0.0-alpha');
  assertBelow('1.0.0-alpha', '1.0.0-alpha-1');
});

test('build metadata ignored', () => {
  assert.equal(compare('1.0.0+build.1', '1.0.0+build.2'), 0);
  assert.equal(compare('1.0.0-rc.1+a', '1.0.0-rc.1+b'), 0);
  assertBelow('1.0.0-rc.1+zzz', '1.0.0+aaa');
});

test('sort does not modify its argument', () => {
  const input = ['1.0.0', '1.0.0-rc.10', '1.0.0-rc.2'];
  const result = sort(input);
  assert.deepEqual(input, ['1.0.0', '1.0.0-rc.10', '1.0.0-rc.2']);
  assert.deepEqual(result, ['1.0.0-rc.2', '1.0.0-rc.10', '1.0.0']);
});
