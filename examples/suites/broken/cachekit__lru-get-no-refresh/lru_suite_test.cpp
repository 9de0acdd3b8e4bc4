// Generated tests for lru::LruCache.
#include <gtest/gtest.h>

#include "lru/lru_cache.hpp"

TEST(LruSuite, IssueExample)
{
    lru::LruCache cache(2);
    cache.put("session", "s1");
    cache.put("user", "u1");
    EXPECT_EQ(cache.get("session"), "s1");
    cache.put("config", "c1");
    EXPECT_TRUE(cache.contains("session"));
}

// wrong expectation: asking whether a key is there counts as a use of it
TEST(LruSuite, ContainsKeepsEntryAlive)
{
    lru::LruCache cache(2);
    cache.put("a", "1");
    cache.put("b", "2");
    ASSERT_TRUE(cache.contains("a"));
    cache.put("c", "3");
    EXPECT_TRUE(cache.contains("a"));
    EXPECT_FALSE(cache.contains("b"));
}
