/* Generated test for ringbuf: the example from the issue. */
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

static const struct test_case cases[] = {
    TEST_CASE(issue_example),
};

int main(int argc, char **argv)
{
    return run_named_test(cases, sizeof cases / sizeof cases[0], argc, argv);
}
