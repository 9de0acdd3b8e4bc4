package example.bytesize;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ByteSizeTest {
    @Test
    void wholeBytes() {
        assertEquals("0 B", ByteSize.format(0));
        assertEquals("1023 B", ByteSize.format(1023));
    }

    @Test
    void kibibytes() {
        assertEquals("1.0 KiB", ByteSize.format(1024));
        assertEquals("1.5 KiB", ByteSize.format(1536));
    }

    @Test
    void largerUnits() {
        assertEquals("1.0 MiB", ByteSize.format(1L << 20));
        assertEquals("2.5 GiB", ByteSize.format(5L << 29));
    }
}
