// Generated tests for tskit's parseDuration.

import { describe, expect, it } from 'vitest';

import { parseDuration } from '../src/index';

describe('parseDuration', () => {
  it('reads 250ms as 250 milliseconds', () => {
    expect(parseDuration('250ms')).toBe(250);
  });

  it('reads several parts', () => {
    expect(parseDuration('1h30m')).toBe(5_400_000);
  });

  it('says which part has no unit', () => {
    expect(() => parseDuration('1h30')).toThrow(/unit/);
  });
});
