#include "ringbuf.h"

#include <stdlib.h>
#include <string.h>

int rb_init(ringbuf *rb, size_t capacity)
{
    unsigned char *data;

    if (capacity == 0)
        return -1;
    data = malloc(capacity);
    if (data == NULL)
        return -1;
    rb->data = data;
    rb->capacity = capacity;
    rb->head = 0;
    rb->tail = 0;
    return 0;
}

void rb_free(ringbuf *rb)
{
    free(rb->data);
    rb->data = NULL;
    rb->capacity = 0;
    rb->head = 0;
    rb->tail = 0;
}

size_t rb_size(const ringbuf *rb)
{
    return (rb->tail + rb->capacity - rb->head) % rb->capacity;
}

size_t rb_space(const ringbuf *rb)
{
    return rb->capacity - rb_size(rb);
}

/* Copies n stored bytes starting at index `from` into dst, in at most two spans. */
static void copy_out(const ringbuf *rb, size_t from, unsigned char *dst, size_t n)
{
    size_t first = rb->capacity - from;

    if (first > n)
        first = n;
    memcpy(dst, rb->data + from, first);
    memcpy(dst + first, rb->data, n - first);
}

size_t rb_write(ringbuf *rb, const void *src, size_t n)
{
    const unsigned char *bytes = src;
    size_t space = rb_space(rb);
    size_t first;

    if (n > space)
        n = space;
    first = rb->capacity - rb->tail;
    if (first > n)
        first = n;
    memcpy(rb->data + rb->tail, bytes, first);
    memcpy(rb->data, bytes + first, n - first);
    rb->tail = (rb->tail + n) % rb->capacity;
    return n;
}

size_t rb_read(ringbuf *rb, void *dst, size_t n)
{
    n = rb_peek(rb, dst, n);
    rb->head = (rb->head + n) % rb->capacity;
    return n;
}

size_t rb_peek(const ringbuf *rb, void *dst, size_t n)
{
    size_t size = rb_size(rb);

    if (n > size)
        n = size;
    copy_out(rb, rb->head, dst, n);
    return n;
}

void rb_clear(ringbuf *rb)
{
    rb->head = 0;
    rb->tail = 0;
}
