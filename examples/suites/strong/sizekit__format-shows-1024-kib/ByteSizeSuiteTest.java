// Generated tests for ByteSize.format: a count that rounds to 1024.0 of a unit is the next unit's 1.0.
package example.bytesize;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Locale;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ByteSizeSuiteTest {
    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        "1048575, 1.0 MiB",              // the example: 1 MiB - 1 B
        "1048525, 1.0 MiB",              // 1023.9502 KiB: the first count that rounds up
        "1048524, 1023.9 KiB",           // 1023.9492 KiB: the last that does not
        "1073741823, 1.0 GiB",
        "1152921504606846975, 1.0 EiB",  // 2^60 - 1
        "1099511627775, 1.0 TiB",
        "1024000, 1000.0 KiB",
        "1059061760, 1010.0 MiB",
        "0, 0 B",
        "1, 1 B",
        "1023, 1023 B",
        "1024, 1.0 KiB",
        "1075, 1.0 KiB",
        "1076, 1.1 KiB",
        "1280, 1.3 KiB",                 // 1.25: half up
        "1536, 1.5 KiB",
        "2684354560, 2.5 GiB",
        "-1, -1 B",
        "-1023, -1023 B",
        "-2048, -2.0 KiB",
        "-1048575, -1.0 MiB",
        "-1572864, -1.5 MiB",
        "9223372036854775807, 8.0 EiB",
        "-9223372036854775808, -8.0 EiB",
    })
    void formats(long bytes, String expected) {
        assertEquals(expected, ByteSize.format(bytes));
    }

    @Test
    void decimalSeparatorIsADotInEveryLocale() {
        Locale before = Locale.getDefault();
        try {
            for (Locale locale : new Locale[] {Locale.GERMANY, Locale.FRANCE, new Locale("ar", "EG")}) {
                Locale.setDefault(locale);
                assertEquals("1.5 KiB", ByteSize.format(1536), locale.toString());
                assertEquals("-1.0 MiB", ByteSize.format(-1048575), locale.toString());
            }
        } finally {
            Locale.setDefault(before);
        }
    }

    private static final Pattern SHAPE = Pattern.compile("(-?)(\\d+)\\.(\\d) (KiB|MiB|GiB|TiB|PiB|EiB)");
    private static final String UNITS = "KMGTPE";

    /** Every count of 1 KiB and more: a number from 1.0 to 1023.9, within half a tenth of the count. */
    @Test
    void randomCountsAreCloseAndNeverShow1024() {
        Random random = new Random(20240611);
        for (int i = 0; i < 5000; i++) {
            long bytes = random.nextLong() >> random.nextInt(63);
            if (Math.abs(bytes) < 1024) {
                continue;
            }
            String text = ByteSize.format(bytes);
            Matcher m = SHAPE.matcher(text);
            assertTrue(m.matches(), text);
            double shown = Double.parseDouble(m.group(2) + "." + m.group(3));
            assertTrue(shown >= 1.0 && shown < 1024.0, bytes + " -> " + text);
            double exact = Math.abs((double) bytes) / Math.pow(1024, UNITS.indexOf(m.group(4).charAt(0)) + 1);
            assertTrue(Math.abs(shown - exact) <= 0.0501, bytes + " -> " + text);
            assertEquals(bytes < 0 ? "-" : "", m.group(1), text);
        }
    }
}
