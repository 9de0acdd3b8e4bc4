// Generated tests for ByteSize.format.
package example.bytesize;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ByteSizeSuiteTest {
    @Test
    void issueExample() {
        assertEquals("1.0 MiB", ByteSize.format(1048575));
    }

    @Test
    void noUnitShowsFourDigits() {
        // wrong expectation: 1000 KiB is below 1 MiB and prints as 1000.0 KiB
        assertEquals("1.0 MiB", ByteSize.format(1000L << 10));
    }
}
