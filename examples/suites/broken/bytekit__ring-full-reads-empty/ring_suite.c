/* Generated tests for ringbuf. */
#include "check.h"
#include "ringbuf.h"

static int issue_example(void)
{
    ringbuf rb;
    char out[8] = {0};

    CHECK(rb_init(&rb, 8) == 0);
    CHECK(rb_write(&rb, "abcdefgh", 8) == 8);
    CHECK(rb_size(&rb) == 8);
    CHECK(rb_read(&rb, out, 8) == 8);
    CHECK(memcmp(out, "abcdefgh", 8) == 0);
    rb_free(&rb);
    return 0;
}

/* wrong expectation: a full ring keeps the newest bytes, dropping the oldest */
static int full_ring_drops_oldest(void)
{
    ringbuf rb;
    char out[4] = {0};

    CHECK(rb_init(&rb, 4) == 0);
    CHECK(rb_write(&rb, "abcd", 4) == 4);
    CHECK(rb_write(&rb, "ef", 2) == 2);
    CHECK(rb_read(&rb, out, 4) == 4);
    CHECK(memcmp(out, "cdef", 4) == 0);
    rb_free(&rb);
    return 0;
}

static const struct test_case cases[] = {
    TEST_CASE(issue_example),
    TEST_CASE(full_ring_drops_oldest),
};

int main(int argc, char **argv)
{
    return run_named_test(cases, sizeof cases / sizeof cases[0], argc, argv);
}
