/* Generated tests for ringbuf. */
#include "check.h"
#include "ringbuf.h"

static int issue_example(void)
{
    ringbuf rb;
    char out[16] = {0};

    CHECK(rb_init(&rb, 16) == 0);
    CHECK(rb_write(&rb, "0123456789abcdef", 16) == 16);
    CHECK(rb_size(&rb) == 16);
    CHECK(rb_read(&rb, out, 16) == 16);
    CHECK(memcmp(out, "0123456789abcdef", 16) == 0);
    rb_free(&rb);
    return 0;
}

static int full_ring_takes_nothing(void)
{
    ringbuf rb;
    char out[4] = {0};

    CHECK(rb_init(&rb, 4) == 0);
    CHECK(rb_write(&rb, "abcd", 4) == 4);
    CHECK(rb_write(&rb, "ef", 2) == 0);
    CHECK(rb_read(&rb, out, 4) == 4 && memcmp(out, "abcd", 4) == 0);
    rb_free(&rb);
    return 0;
}

static int clear_empties(void)
{
    ringbuf rb;

    CHECK(rb_init(&rb, 4) == 0);
    CHECK(rb_write(&rb, "ab", 2) == 2);
    rb_clear(&rb);
    CHECK(rb_size(&rb) == 0);
    rb_free(&rb);
    return 0;
}

/* The fix counts the stored bytes in rb.size; a full ring has head == tail. */
static int internals_after_fill(void)
{
    ringbuf rb;

    CHECK(rb_init(&rb, 4) == 0);
    CHECK(rb_write(&rb, "abcd", 4) == 4);
    CHECK(rb.size == 4);
    CHECK(rb.head == rb.tail);
    CHECK(rb.tail == 0);
    rb_free(&rb);
    return 0;
}

static int internals_after_drain(void)
{
    ringbuf rb;
    char out[4];

    CHECK(rb_init(&rb, 4) == 0);
    CHECK(rb_write(&rb, "abc", 3) == 3);
    CHECK(rb_read(&rb, out, 3) == 3);
    CHECK(rb.size == 0);
    CHECK(rb.head == 3 && rb.tail == 3);
    rb_free(&rb);
    return 0;
}

static const struct test_case cases[] = {
    TEST_CASE(issue_example),
    TEST_CASE(full_ring_takes_nothing),
    TEST_CASE(clear_empties),
    TEST_CASE(internals_after_fill),
    TEST_CASE(internals_after_drain),
};

int main(int argc, char **argv)
{
    return run_named_test(cases, sizeof cases / sizeof cases[0], argc, argv);
}
