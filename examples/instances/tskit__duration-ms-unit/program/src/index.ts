export { DurationError, UNITS, formatDuration, parseDuration } from './duration';
