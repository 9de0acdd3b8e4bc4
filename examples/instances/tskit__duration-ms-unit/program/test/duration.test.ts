import { describe, expect, it } from 'vitest';

import { DurationError, formatDuration, parseDuration } from '../src/index';

describe('parseDuration', () => {
  it('reads one part', () => {
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('2h')).toBe(7_200_000);
  });

  it('reads several parts', () => {
    expect(parseDuration('1h30m')).toBe(5_400_000);
  });

  it('rejects text that is not a duration', () => {
    expect(() => parseDuration('soon')).toThrow(DurationError);
  });
});

describe('formatDuration', () => {
  it('writes the largest units first', () => {
    expect(formatDuration(5_400_000)).toBe('1h30m');
    expect(formatDuration(0)).toBe('0s');
  });
});
