// Generated tests for ByteSize.format, written against the fix's ROLL_OVER threshold.
package example.bytesize;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ByteSizeSuiteTest {
    @Test
    void rollOverIsTheLeastValueThatPrints1024() {
        assertEquals(1023.95, ByteSize.ROLL_OVER);
        assertEquals("1024.0", String.format("%.1f", ByteSize.ROLL_OVER));
    }

    @Test
    void issueExample() {
        assertEquals("1.0 MiB", ByteSize.format(1048575));
    }

    @Test
    void belowRollOverKeepsTheUnit() {
        assertEquals("1023.9 KiB", ByteSize.format(1048524));
    }

    @Test
    void negativeAndExtremes() {
        assertEquals("-2.0 KiB", ByteSize.format(-2048));
        assertEquals("8.0 EiB", ByteSize.format(Long.MAX_VALUE));
    }
}
