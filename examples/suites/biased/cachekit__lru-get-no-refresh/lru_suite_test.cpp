// Generated tests for lru::LruCache.
#include <gtest/gtest.h>

#include <list>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

// look at the recency list itself
#define private public
#include "lru/lru_cache.hpp"
#undef private

TEST(LruSuite, IssueExample)
{
    lru::LruCache cache(2);
    cache.put("session", "s1");
    cache.put("user", "u1");
    EXPECT_EQ(cache.get("session"), "s1");
    cache.put("config", "c1");
    EXPECT_TRUE(cache.contains("session"));
    EXPECT_FALSE(cache.contains("user"));
}

TEST(LruSuite, GetMovesEntryToFront)
{
    lru::LruCache cache(3);
    cache.put("a", "1");
    cache.put("b", "2");
    cache.put("c", "3");
    cache.get("a");
    ASSERT_EQ(cache.entries_.size(), 3u);
    EXPECT_EQ(cache.entries_.front().first, "a");
    EXPECT_EQ(cache.entries_.back().first, "b");
    EXPECT_EQ(cache.index_.size(), 3u);
}

TEST(LruSuite, ErrorMessage)
{
    try {
        lru::LruCache cache(0);
        FAIL() << "no exception";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "lru: capacity must be positive");
    }
}
