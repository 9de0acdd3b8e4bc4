// Generated tests for lru::LruCache: reading an entry makes it the most recently used.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lru/lru_cache.hpp"

TEST(LruSuite, IssueExample)
{
    lru::LruCache cache(2);
    cache.put("session", "s1");
    cache.put("user", "u1");
    EXPECT_EQ(cache.get("session"), "s1");
    cache.put("config", "c1");
    EXPECT_EQ(cache.get("session"), "s1");
    EXPECT_EQ(cache.get("user"), std::nullopt);
    EXPECT_EQ(cache.get("config"), "c1");
}

TEST(LruSuite, MissingReadChangesNothing)
{
    lru::LruCache cache(2);
    cache.put("a", "1");
    cache.put("b", "2");
    EXPECT_EQ(cache.get("zzz"), std::nullopt);
    cache.put("c", "3");
    EXPECT_FALSE(cache.contains("a"));
    EXPECT_EQ(cache.size(), 2u);
}

TEST(LruSuite, UpdateIsAUse)
{
    lru::LruCache cache(3);
    cache.put("a", "1");
    cache.put("b", "2");
    cache.put("c", "3");
    cache.put("a", "1b");
    cache.put("d", "4");
    EXPECT_FALSE(cache.contains("b"));
    EXPECT_EQ(cache.get("a"), "1b");
    EXPECT_EQ(cache.size(), 3u);
}

TEST(LruSuite, CapacityIsABound)
{
    for (std::size_t capacity : {1u, 2u, 5u}) {
        lru::LruCache cache(capacity);
        for (int i = 0; i < 12; ++i) {
            cache.put(std::to_string(i), "v");
            ASSERT_EQ(cache.size(), std::min<std::size_t>(i + 1, capacity));
        }
        EXPECT_TRUE(cache.contains("11"));
        EXPECT_FALSE(cache.contains(std::to_string(11 - capacity)));
    }
}

TEST(LruSuite, ContainsDoesNotProtect)
{
    lru::LruCache cache(2);
    cache.put("a", "1");
    cache.put("b", "2");
    for (int i = 0; i < 3; ++i)
        EXPECT_TRUE(cache.contains("a"));
    cache.put("c", "3");
    EXPECT_FALSE(cache.contains("a"));
}

TEST(LruSuite, EraseThenRefill)
{
    lru::LruCache cache(2);
    cache.put("a", "1");
    cache.put("b", "2");
    EXPECT_TRUE(cache.erase("a"));
    EXPECT_EQ(cache.size(), 1u);
    cache.put("c", "3");
    cache.put("b", "2b"); // b is now more recent than c
    cache.put("d", "4");
    EXPECT_TRUE(cache.contains("b"));
    EXPECT_FALSE(cache.contains("c"));
    EXPECT_FALSE(cache.erase("a"));
    EXPECT_TRUE(cache.erase("b"));
    EXPECT_TRUE(cache.erase("d"));
    EXPECT_EQ(cache.size(), 0u);
}

TEST(LruSuite, ZeroCapacityRejected)
{
    EXPECT_THROW(lru::LruCache(0), std::invalid_argument);
    EXPECT_EQ(lru::LruCache(1).capacity(), 1u);
}

// Random puts, gets, erases and contains checked against a plain vector model.
TEST(LruSuite, RandomAgainstModel)
{
    const std::size_t capacity = 4;
    lru::LruCache cache(capacity);
    std::vector<std::pair<std::string, std::string>> model; // least recently used first
    auto find = [&](const std::string& k) {
        return std::find_if(model.begin(), model.end(), [&](const auto& e) { return e.first == k; });
    };
    unsigned seed = 2024;
    for (int round = 0; round < 4000; ++round) {
        seed = seed * 1103515245u + 12345u;
        std::string key(1, static_cast<char>('a' + (seed >> 16) % 7));
        std::string value = std::to_string(round);
        switch ((seed >> 8) % 4) {
        case 0: {
            cache.put(key, value);
            auto it = find(key);
            if (it != model.end())
                model.erase(it);
            model.emplace_back(key, value);
            if (model.size() > capacity)
                model.erase(model.begin());
            break;
        }
        case 1: {
            auto it = find(key);
            std::optional<std::string> want;
            if (it != model.end()) {
                want = it->second;
                auto entry = *it;
                model.erase(it);
                model.push_back(entry);
            }
            ASSERT_EQ(cache.get(key), want) << "round " << round;
            break;
        }
        case 2: {
            auto it = find(key);
            bool had = it != model.end();
            if (had)
                model.erase(it);
            ASSERT_EQ(cache.erase(key), had) << "round " << round;
            break;
        }
        default:
            ASSERT_EQ(cache.contains(key), find(key) != model.end()) << "round " << round;
        }
        ASSERT_EQ(cache.size(), model.size()) << "round " << round;
    }
}
