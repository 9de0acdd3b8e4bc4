// Generated test for lru::LruCache: the example from the issue.
#include <gtest/gtest.h>

#include "lru/lru_cache.hpp"

TEST(LruSuite, IssueExample)
{
    lru::LruCache cache(2);
    cache.put("session", "s1");
    cache.put("user", "u1");
    EXPECT_EQ(cache.get("session"), "s1");
    cache.put("config", "c1");
    EXPECT_EQ(cache.get("session"), "s1");
}
