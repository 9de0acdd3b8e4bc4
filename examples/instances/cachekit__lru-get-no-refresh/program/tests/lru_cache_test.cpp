#include <gtest/gtest.h>

#include <stdexcept>

#include "lru/lru_cache.hpp"

TEST(LruCacheBasics, StoresAndReads)
{
    lru::LruCache cache(4);
    cache.put("a", "1");
    cache.put("b", "2");
    EXPECT_EQ(cache.get("a"), "1");
    EXPECT_EQ(cache.get("b"), "2");
    EXPECT_EQ(cache.get("c"), std::nullopt);
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_EQ(cache.capacity(), 4u);
}

TEST(LruCacheBasics, PutReplacesValue)
{
    lru::LruCache cache(2);
    cache.put("a", "1");
    cache.put("a", "2");
    EXPECT_EQ(cache.get("a"), "2");
    EXPECT_EQ(cache.size(), 1u);
}

TEST(LruCacheBasics, EvictsOldestUnread)
{
    lru::LruCache cache(2);
    cache.put("a", "1");
    cache.put("b", "2");
    cache.put("c", "3");
    EXPECT_FALSE(cache.contains("a"));
    EXPECT_TRUE(cache.contains("b"));
    EXPECT_TRUE(cache.contains("c"));
}
