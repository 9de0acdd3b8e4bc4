'use strict';

// Generated test for verkit.compare: the example from the issue.

const test = require('node:test');
const assert = require('node:assert/strict');

const { compare } = require('../src/index.js');

test('alpha.10 ranks above alpha.2', () => {
  assert.equal(compare('1.0.0-alpha.10', '1.0.0-alpha.2'), 1);
});
