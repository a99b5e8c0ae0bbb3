// Size-first structs, status strings, the last-error message and the exception guard.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "src/error.h"
#include "src/structs.h"
#include "tests/host/test_fakes.h"

using ggemm_fakes::message_contains;

namespace {

std::string last_message() {
    uint64_t required = 0;
    REQUIRE(ggemm_last_error_message(nullptr, 0, &required) == GGEMM_SUCCESS);
    std::string text(required, '\0');
    REQUIRE(ggemm_last_error_message(&text[0], required, nullptr) == GGEMM_SUCCESS);
    text.resize(required - 1);
    return text;
}

}  // namespace

TEST_CASE("ggemm_plan_desc_init writes every default") {
    ggemm_plan_desc desc;
    std::memset(&desc, 0x5a, sizeof desc);
    REQUIRE(ggemm_plan_desc_init(&desc, sizeof desc) == GGEMM_SUCCESS);
    CHECK(desc.struct_size == sizeof desc);
    CHECK(desc.device == 0);
    CHECK(desc.m_capacity == 0);
    CHECK(desc.n == 0);
    CHECK(desc.k == 0);
    CHECK(desc.num_experts == 0);
    CHECK(desc.weight_mode == GGEMM_WEIGHTS_DENSE);
    CHECK(desc.c_dtype == GGEMM_DTYPE_BF16);
    CHECK(desc.d_dtype == GGEMM_DTYPE_BF16);
    CHECK(desc.bias_dtype == GGEMM_DTYPE_NONE);
    CHECK(desc.generate_c == 0);
    CHECK(desc.scheduler == GGEMM_SCHEDULER_STATIC);
    CHECK(desc.tile_m == 0);
    CHECK(desc.tile_n == 0);
    CHECK(desc.cluster_m == 0);
    CHECK(desc.sm_margin == 0);
    CHECK(desc.reserved0 == 0);
}

TEST_CASE("the init calls write only the bytes that fit an older struct") {
    unsigned char bytes[sizeof(ggemm_plan_desc) + 16];
    std::memset(bytes, 0xab, sizeof bytes);
    auto* desc = reinterpret_cast<ggemm_plan_desc*>(bytes);
    REQUIRE(ggemm_plan_desc_init(desc, GGEMM_PLAN_DESC_MIN_SIZE) == GGEMM_SUCCESS);
    CHECK(desc->struct_size == GGEMM_PLAN_DESC_MIN_SIZE);
    CHECK(desc->c_dtype == GGEMM_DTYPE_BF16);
    CHECK(desc->scheduler == GGEMM_SCHEDULER_STATIC);
    for (std::size_t i = GGEMM_PLAN_DESC_MIN_SIZE; i < sizeof bytes; ++i) {
        CAPTURE(i);
        CHECK(bytes[i] == 0xab);
    }

    unsigned char args_bytes[sizeof(ggemm_args) + 8];
    std::memset(args_bytes, 0xcd, sizeof args_bytes);
    auto* args = reinterpret_cast<ggemm_args*>(args_bytes);
    REQUIRE(ggemm_args_init(args, GGEMM_ARGS_MIN_SIZE) == GGEMM_SUCCESS);
    CHECK(args->struct_size == GGEMM_ARGS_MIN_SIZE);
    CHECK(args->m == 0);
    CHECK(args->workspace_size == 0);
    CHECK(args_bytes[GGEMM_ARGS_MIN_SIZE] == 0xcd);
}

TEST_CASE("the init calls refuse NULL and impossible sizes") {
    CHECK(ggemm_plan_desc_init(nullptr, sizeof(ggemm_plan_desc)) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("NULL"));
    ggemm_plan_desc desc;
    CHECK(ggemm_plan_desc_init(&desc, 8) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(message_contains("got 8"));
    CHECK(ggemm_plan_desc_init(&desc, 100000) == GGEMM_ERROR_STRUCT_SIZE);
    ggemm_args args;
    CHECK(ggemm_args_init(&args, GGEMM_ARGS_MIN_SIZE - 8) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(ggemm_args_init(nullptr, sizeof args) == GGEMM_ERROR_NULL_ARGUMENT);
}

TEST_CASE("the init calls accept exactly the sizes the library reads later") {
    // A size that ends inside a field is refused by plan_create / execute: init must refuse it
    // too, and write nothing.
    for (uint32_t size = GGEMM_PLAN_DESC_MIN_SIZE; size <= sizeof(ggemm_plan_desc); ++size) {
        CAPTURE(size);
        ggemm_plan_desc desc;
        std::memset(&desc, 0xab, sizeof desc);
        const ggemm_status_t init = ggemm_plan_desc_init(&desc, size);
        ggemm_plan_desc probe;
        std::memset(&probe, 0, sizeof probe);
        probe.struct_size = size;
        ggemm_plan_desc read;
        const ggemm_status_t read_status = ggemm::read_plan_desc(&probe, "desc", &read);
        CHECK(init == read_status);
        if (init != GGEMM_SUCCESS) {
            CHECK(init == GGEMM_ERROR_STRUCT_SIZE);
            CHECK(message_contains("ends inside a field of ggemm_plan_desc"));
            CHECK(desc.struct_size == 0xabababab);
        }
    }
    for (uint32_t size = GGEMM_ARGS_MIN_SIZE; size <= sizeof(ggemm_args); ++size) {
        CAPTURE(size);
        ggemm_args args;
        std::memset(&args, 0xab, sizeof args);
        const ggemm_status_t init = ggemm_args_init(&args, size);
        ggemm_args probe;
        std::memset(&probe, 0, sizeof probe);
        probe.struct_size = size;
        ggemm_args read;
        CHECK(init == ggemm::read_args(&probe, "args", &read));
        if (init != GGEMM_SUCCESS) CHECK(message_contains("ends inside a field of ggemm_args"));
    }
    ggemm_plan_desc desc;
    CHECK(ggemm_plan_desc_init(&desc, GGEMM_PLAN_DESC_MIN_SIZE + 2) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(ggemm_args_init(nullptr, GGEMM_ARGS_MIN_SIZE + 4) == GGEMM_ERROR_NULL_ARGUMENT);
    ggemm_args args;
    CHECK(ggemm_args_init(&args, GGEMM_ARGS_MIN_SIZE + 4) == GGEMM_ERROR_STRUCT_SIZE);
}

TEST_CASE("reading an older, smaller descriptor defaults the missing fields") {
    // The caller's struct ends at struct_size: whatever follows in memory is not theirs.
    unsigned char bytes[sizeof(ggemm_plan_desc)];
    std::memset(bytes, 0x7f, sizeof bytes);
    ggemm_plan_desc base = ggemm_fakes::valid_desc();
    base.tile_m = 256;
    base.tile_n = 192;
    std::memcpy(bytes, &base, sizeof base);

    SUBCASE("minimum size: every optional field defaults") {
        reinterpret_cast<ggemm_plan_desc*>(bytes)->struct_size = GGEMM_PLAN_DESC_MIN_SIZE;
        ggemm_plan_desc read;
        REQUIRE(ggemm::read_plan_desc(reinterpret_cast<ggemm_plan_desc*>(bytes), "desc", &read) == GGEMM_SUCCESS);
        CHECK(read.struct_size == sizeof read);
        CHECK(read.n == base.n);
        CHECK(read.k == base.k);
        CHECK(read.num_experts == base.num_experts);
        CHECK(read.scheduler == base.scheduler);
        CHECK(read.tile_m == 0);
        CHECK(read.tile_n == 0);
        CHECK(read.cluster_m == 0);
        CHECK(read.sm_margin == 0);
        CHECK(read.reserved0 == 0);
    }
    SUBCASE("a middle version: the fields it has are read") {
        reinterpret_cast<ggemm_plan_desc*>(bytes)->struct_size = offsetof(ggemm_plan_desc, cluster_m);
        ggemm_plan_desc read;
        REQUIRE(ggemm::read_plan_desc(reinterpret_cast<ggemm_plan_desc*>(bytes), "desc", &read) == GGEMM_SUCCESS);
        CHECK(read.tile_m == 256);
        CHECK(read.tile_n == 192);
        CHECK(read.cluster_m == 0);
    }
}

TEST_CASE("reading a newer, larger struct: zero trailing bytes pass, any other byte is refused") {
    unsigned char bytes[sizeof(ggemm_plan_desc) + 24] = {};
    ggemm_plan_desc base = ggemm_fakes::valid_desc();
    std::memcpy(bytes, &base, sizeof base);
    reinterpret_cast<ggemm_plan_desc*>(bytes)->struct_size = sizeof bytes;
    ggemm_plan_desc read;
    CHECK(ggemm::read_plan_desc(reinterpret_cast<ggemm_plan_desc*>(bytes), "desc", &read) == GGEMM_SUCCESS);
    CHECK(read.n == base.n);

    bytes[sizeof(ggemm_plan_desc) + 3] = 1;
    bytes[sizeof(ggemm_plan_desc) + 9] = 2;
    CHECK(ggemm::read_plan_desc(reinterpret_cast<ggemm_plan_desc*>(bytes), "desc", &read) == GGEMM_ERROR_STRUCT_SIZE);
    const std::string expected = "byte " + std::to_string(sizeof(ggemm_plan_desc) + 3);
    CHECK(message_contains(expected.c_str()));
    CHECK(message_contains("0x01"));

    // The same through the public entry point: refused before any device question.
    ggemm_plan_t plan = reinterpret_cast<ggemm_plan_t>(0x1);
    CHECK(ggemm_plan_create(&plan, reinterpret_cast<ggemm_plan_desc*>(bytes)) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(plan == nullptr);
}

TEST_CASE("reading a struct smaller than the first version, or absurdly large, is refused") {
    ggemm_plan_desc desc = ggemm_fakes::valid_desc();
    ggemm_plan_desc read;
    desc.struct_size = GGEMM_PLAN_DESC_MIN_SIZE - 4;
    CHECK(ggemm::read_plan_desc(&desc, "desc", &read) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(message_contains("desc->struct_size must be at least 60"));
    CHECK(message_contains("got 56"));
    desc.struct_size = 0xdeadbeef;
    CHECK(ggemm::read_plan_desc(&desc, "desc", &read) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(message_contains("at most"));
    CHECK(ggemm::read_plan_desc(nullptr, "desc", &read) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("desc is NULL"));

    ggemm_args args = ggemm_fakes::valid_args();
    ggemm_args read_args;
    args.struct_size = 64;
    CHECK(ggemm::read_args(&args, "args", &read_args) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(message_contains("args->struct_size must be at least 104"));
}

TEST_CASE("reading a struct whose size ends inside a field is refused, not half copied") {
    ggemm_plan_desc desc = ggemm_fakes::valid_desc();
    ggemm_plan_desc read;
    desc.tile_m = 0x10080;  // 62 bytes would keep only its low half, 128
    desc.struct_size = 62;
    CHECK(ggemm::read_plan_desc(&desc, "desc", &read) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(message_contains("desc->struct_size = 62 ends inside a field of ggemm_plan_desc"));
    desc.tile_m = 0;
    for (uint32_t size : {60u, 64u, 68u, 72u, 76u, 80u}) {
        desc.struct_size = size;
        CAPTURE(size);
        CHECK(ggemm::read_plan_desc(&desc, "desc", &read) == GGEMM_SUCCESS);
    }

    ggemm_args args = ggemm_fakes::valid_args();
    ggemm_args read_args;
    args.struct_size = 108;  // half of device_status
    CHECK(ggemm::read_args(&args, "args", &read_args) == GGEMM_ERROR_STRUCT_SIZE);
    CHECK(message_contains("args->struct_size = 108 ends inside a field of ggemm_args"));
}

TEST_CASE("reading ggemm_args of the first version leaves device_status NULL") {
    unsigned char bytes[sizeof(ggemm_args)];
    std::memset(bytes, 0xee, sizeof bytes);
    ggemm_args base = ggemm_fakes::valid_args();
    std::memcpy(bytes, &base, GGEMM_ARGS_MIN_SIZE);
    reinterpret_cast<ggemm_args*>(bytes)->struct_size = GGEMM_ARGS_MIN_SIZE;
    ggemm_args read;
    REQUIRE(ggemm::read_args(reinterpret_cast<ggemm_args*>(bytes), "args", &read) == GGEMM_SUCCESS);
    CHECK(read.device_status == nullptr);
    CHECK(read.a == base.a);
    CHECK(read.workspace_size == base.workspace_size);
}

TEST_CASE("reading ggemm_args that end after device_status leaves valid_rows NULL") {
    unsigned char bytes[sizeof(ggemm_args)];
    std::memset(bytes, 0xee, sizeof bytes);  // what lies past the caller's struct is not theirs
    ggemm_args base = ggemm_fakes::valid_args();
    uint32_t status_word = 0;
    base.device_status = &status_word;
    const uint32_t size = offsetof(ggemm_args, valid_rows);
    std::memcpy(bytes, &base, size);
    reinterpret_cast<ggemm_args*>(bytes)->struct_size = size;
    ggemm_args read;
    REQUIRE(ggemm::read_args(reinterpret_cast<ggemm_args*>(bytes), "args", &read) == GGEMM_SUCCESS);
    CHECK(read.valid_rows == nullptr);
    CHECK(read.device_status == &status_word);

    ggemm_args init;
    std::memset(&init, 0xab, sizeof init);
    REQUIRE(ggemm_args_init(&init, size) == GGEMM_SUCCESS);
    CHECK(init.struct_size == size);
    CHECK(init.device_status == nullptr);
    const auto* raw = reinterpret_cast<const unsigned char*>(&init);
    CHECK(raw[size] == 0xab);  // the field past the caller's struct is left alone

    base.struct_size = size + 4;  // half of valid_rows
    CHECK(ggemm::read_args(&base, "args", &read) == GGEMM_ERROR_STRUCT_SIZE);
}

TEST_CASE("every status code has its own name") {
    std::set<std::string> names;
    for (ggemm_status_t status = GGEMM_SUCCESS; status <= GGEMM_ERROR_INVALID_VALUE; ++status) {
        const char* name = ggemm_status_string(status);
        REQUIRE(name != nullptr);
        CAPTURE(status);
        CHECK(std::strncmp(name, "GGEMM_", 6) == 0);
        CHECK(std::string(name) != "GGEMM_ERROR_UNKNOWN_STATUS");
        names.insert(name);
    }
    CHECK(names.size() == 20);
    CHECK(std::string(ggemm_status_string(GGEMM_SUCCESS)) == "GGEMM_SUCCESS");
    CHECK(std::string(ggemm_status_string(GGEMM_ERROR_MISALIGNED)) == "GGEMM_ERROR_MISALIGNED");
    CHECK(std::string(ggemm_status_string(GGEMM_ERROR_INVALID_VALUE)) == "GGEMM_ERROR_INVALID_VALUE");
    CHECK(std::string(ggemm_status_string(20)) == "GGEMM_ERROR_UNKNOWN_STATUS");
    CHECK(std::string(ggemm_status_string(-1)) == "GGEMM_ERROR_UNKNOWN_STATUS");
}

TEST_CASE("ggemm_version is the header's version") {
    CHECK(ggemm_version() == GGEMM_VERSION);
    CHECK(GGEMM_VERSION == GGEMM_VERSION_MAJOR * 10000 + GGEMM_VERSION_MINOR * 100 + GGEMM_VERSION_PATCH);
}

TEST_CASE("last error: set on failure, copied with truncation, cleared by a success") {
    ggemm_plan_desc desc;
    REQUIRE(ggemm_plan_desc_init(&desc, 8) == GGEMM_ERROR_STRUCT_SIZE);
    const std::string message = last_message();
    CHECK(message.find("struct_size") != std::string::npos);

    uint64_t required = 0;
    CHECK(ggemm_last_error_message(nullptr, 0, &required) == GGEMM_SUCCESS);
    CHECK(required == message.size() + 1);

    char small[6];
    std::memset(small, 'x', sizeof small);
    CHECK(ggemm_last_error_message(small, sizeof small, &required) == GGEMM_SUCCESS);
    CHECK(std::string(small) == message.substr(0, 5));
    CHECK(required == message.size() + 1);

    std::string exact(message.size() + 1, 'x');
    CHECK(ggemm_last_error_message(&exact[0], exact.size(), nullptr) == GGEMM_SUCCESS);
    CHECK(std::string(exact.c_str()) == message);

    // Reading the message does not clear it.
    CHECK(last_message() == message);

    // A NULL buffer with a size is itself refused.
    CHECK(ggemm_last_error_message(nullptr, 10, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(last_message().find("buffer is NULL") != std::string::npos);

    // Any successful call clears it.
    REQUIRE(ggemm_plan_desc_init(&desc, sizeof desc) == GGEMM_SUCCESS);
    CHECK(last_message().empty());
    CHECK(ggemm_last_error_message(nullptr, 0, &required) == GGEMM_SUCCESS);
    CHECK(required == 1);
    char one[1] = {'x'};
    CHECK(ggemm_last_error_message(one, 1, nullptr) == GGEMM_SUCCESS);
    CHECK(one[0] == '\0');
}

TEST_CASE("last error is per thread") {
    ggemm_plan_desc desc;
    REQUIRE(ggemm_plan_desc_init(&desc, 8) == GGEMM_ERROR_STRUCT_SIZE);
    std::string other_thread_message = "unset";
    std::thread other([&] {
        char buffer[64] = "unset";
        ggemm_last_error_message(buffer, sizeof buffer, nullptr);
        other_thread_message = buffer;
        ggemm_plan_desc other_desc;
        ggemm_plan_desc_init(&other_desc, 12);  // fails on this thread only
    });
    other.join();
    CHECK(other_thread_message.empty());
    CHECK(last_message().find("got 8") != std::string::npos);
}

TEST_CASE("the guard turns exceptions into status codes") {
    CHECK(ggemm::guarded("test_bad_alloc", []() -> ggemm_status_t { throw std::bad_alloc(); }) ==
          GGEMM_ERROR_OUT_OF_MEMORY);
    CHECK(message_contains("test_bad_alloc"));
    CHECK(ggemm::guarded("test_runtime", []() -> ggemm_status_t { throw std::runtime_error("boom"); }) ==
          GGEMM_ERROR_INTERNAL);
    CHECK(message_contains("boom"));
    CHECK(ggemm::guarded("test_int", []() -> ggemm_status_t { throw 42; }) == GGEMM_ERROR_INTERNAL);
    CHECK(ggemm::guarded("test_ok", [] { return GGEMM_SUCCESS; }) == GGEMM_SUCCESS);
    CHECK(std::string(ggemm::last_error()).empty());
}

TEST_CASE("plan calls refuse NULL plans and destroy(NULL) is a no-op") {
    CHECK(ggemm_plan_destroy(nullptr) == GGEMM_SUCCESS);
    uint64_t bytes = 0;
    CHECK(ggemm_plan_workspace_size(nullptr, &bytes) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("plan is NULL"));
    CHECK(ggemm_plan_describe(nullptr, nullptr, 0, &bytes) == GGEMM_ERROR_NULL_ARGUMENT);
    ggemm_args args;
    ggemm_args_init(&args, sizeof args);
    CHECK(ggemm_execute(nullptr, &args, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("plan is NULL"));
    CHECK(ggemm_plan_create(nullptr, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    ggemm_plan_t plan = nullptr;
    CHECK(ggemm_plan_create(&plan, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("desc is NULL"));
}

TEST_CASE("plan describe and workspace size copy out of a plan") {
    auto variants = ggemm_fakes::width_variants();
    ggemm_plan plan;
    ggemm_plan_desc desc = ggemm_fakes::valid_desc();
    desc.scheduler = GGEMM_SCHEDULER_DYNAMIC;
    REQUIRE(ggemm::build_plan(desc, ggemm_fakes::sm90_device(), ggemm_fakes::list_of(variants), &plan) ==
            GGEMM_SUCCESS);
    uint64_t bytes = 0;
    CHECK(ggemm_plan_workspace_size(&plan, &bytes) == GGEMM_SUCCESS);
    CHECK(bytes == 128);
    CHECK(ggemm_plan_workspace_size(&plan, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);

    uint64_t required = 0;
    CHECK(ggemm_plan_describe(&plan, nullptr, 0, &required) == GGEMM_SUCCESS);
    CHECK(required == plan.description.size() + 1);
    std::string text(required, '\0');
    CHECK(ggemm_plan_describe(&plan, &text[0], text.size(), nullptr) == GGEMM_SUCCESS);
    CHECK(std::string(text.c_str()) == plan.description);
    char small[10];
    CHECK(ggemm_plan_describe(&plan, small, sizeof small, nullptr) == GGEMM_SUCCESS);
    CHECK(std::string(small) == plan.description.substr(0, 9));
    CHECK(ggemm_plan_describe(&plan, nullptr, 5, nullptr) == GGEMM_ERROR_NULL_ARGUMENT);
}
