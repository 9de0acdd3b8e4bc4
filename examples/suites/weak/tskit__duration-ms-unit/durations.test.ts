// Generated test for tskit's parseDuration: the example from the issue.

import { expect, it } from 'vitest';

import { parseDuration } from '../src/index';

it('reads 250ms as 250 milliseconds', () => {
  expect(parseDuration('250ms')).toBe(250);
});

it('reads 1s500ms as 1500 milliseconds', () => {
  expect(parseDuration('1s500ms')).toBe(1_500);
});
