package example.bytesize;

import java.util.Locale;

/** Byte counts for people: binary units (1 KiB = 1024 B), one decimal. */
public final class ByteSize {
    private static final String[] UNITS = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

    private ByteSize() {
    }

    /**
     * Formats a byte count in the largest unit it reaches, with one decimal rounded half up:
     * {@code 1536} is {@code "1.5 KiB"}. Counts below 1024 are whole bytes ({@code "1023 B"});
     * negative counts keep their sign ({@code "-2.0 KiB"}). The decimal separator is always a dot.
     */
    public static String format(long bytes) {
        // Math.abs(Long.MIN_VALUE) is negative; one byte less prints the same
        long abs = bytes == Long.MIN_VALUE ? Long.MAX_VALUE : Math.abs(bytes);
        if (abs < 1024) {
            return bytes + " B";
        }
        double value = abs;
        int unit = 0;
        while (value >= 1024 && unit < UNITS.length - 1) {
            value /= 1024;
            unit++;
        }
        return String.format(Locale.ROOT, "%s%.1f %s", bytes < 0 ? "-" : "", value, UNITS[unit]);
    }
}
