#include "check.h"
#include "ringbuf.h"

static int init_rejects_zero_capacity(void)
{
    ringbuf rb;

    CHECK(rb_init(&rb, 0) == -1);
    return 0;
}

static int fresh_ring_is_empty(void)
{
    ringbuf rb;

    CHECK(rb_init(&rb, 16) == 0);
    CHECK(rb_size(&rb) == 0);
    CHECK(rb_space(&rb) == 16);
    rb_free(&rb);
    return 0;
}

static int write_then_read(void)
{
    ringbuf rb;
    char out[8] = {0};

    CHECK(rb_init(&rb, 16) == 0);
    CHECK(rb_write(&rb, "hello", 5) == 5);
    CHECK(rb_size(&rb) == 5);
    CHECK(rb_read(&rb, out, sizeof out) == 5);
    CHECK(memcmp(out, "hello", 5) == 0);
    CHECK(rb_size(&rb) == 0);
    rb_free(&rb);
    return 0;
}

static const struct test_case cases[] = {
    TEST_CASE(init_rejects_zero_capacity),
    TEST_CASE(fresh_ring_is_empty),
    TEST_CASE(write_then_read),
};

int main(int argc, char **argv)
{
    return run_named_test(cases, sizeof cases / sizeof cases[0], argc, argv);
}
