// Golden request/response files (tests/protocol/) fed through a real kwb-worker process.
// Each *.response.json holds the fields that must match; "*" matches any value that is present.
#include "worker_client.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

using json = nlohmann::json;
namespace fs = std::filesystem;
using kwb::test::readFile;
using kwb::test::WorkerClient;

namespace {

const std::string kSource = KWB_SOURCE_DIR;


// Whether `actual` has every field of `expected`, recursively; reports the first difference.
bool matches(const json& expected, const json& actual, const std::string& path, std::string* why)
{
    if (expected.is_string() && expected == "*") {
        if (actual.is_null() && path.find("cuda_device_count") == std::string::npos) {
            *why = path + " is missing";
            return false;
        }
        return true;
    }
    if (expected.is_object()) {
        if (!actual.is_object()) {
            *why = path + " is not an object";
            return false;
        }
        for (auto it = expected.begin(); it != expected.end(); ++it) {
            if (!actual.contains(it.key())) {
                *why = path + "." + it.key() + " is missing";
                return false;
            }
            if (!matches(it.value(), actual[it.key()], path + "." + it.key(), why))
                return false;
        }
        return true;
    }
    if (expected.is_number() && actual.is_number()) {
        if (expected.get<double>() != actual.get<double>()) {
            *why = path + ": expected " + expected.dump() + ", got " + actual.dump();
            return false;
        }
        return true;
    }
    if (expected != actual) {
        *why = path + ": expected " + expected.dump() + ", got " + actual.dump();
        return false;
    }
    return true;
}

} // namespace

TEST_CASE("golden request/response files")
{
    std::vector<fs::path> requests;
    for (const auto& e : fs::directory_iterator(kSource + "/tests/protocol"))
        if (e.path().extension() == ".request")
            requests.push_back(e.path());
    std::sort(requests.begin(), requests.end());
    REQUIRE(requests.size() >= 10);

    WorkerClient worker(kwb::test::findWorker(KWB_WORKER_PATH), {"--tasks-dir", kSource + "/tasks"});
    std::string err;
    REQUIRE(worker.start(&err));
    for (const auto& req : requests) {
        CAPTURE(req.filename().string());
        std::string line = readFile(req.string());
        while (!line.empty() && line.back() == '\n')
            line.pop_back();
        // Sent raw, malformed ones too: the worker must survive them.
        auto reply = worker.requestLine(line, 120);
        REQUIRE(reply.outcome == WorkerClient::Outcome::Ok);
        fs::path expectedPath = req;
        expectedPath.replace_extension(".response.json");
        json expected = json::parse(readFile(expectedPath.string()));
        std::string why;
        CHECK_MESSAGE(matches(expected, reply.response, "response", &why), why << "\nfull: " << reply.response.dump());
    }
}

TEST_CASE("a line over 16 MiB is refused and the worker goes on")
{
    WorkerClient worker(kwb::test::findWorker(KWB_WORKER_PATH), {"--tasks-dir", kSource + "/tasks"});
    std::string err;
    REQUIRE(worker.start(&err));
    json big = {{"type", "hello"}, {"pad", std::string((16u << 20) + 10, 'x')}};
    auto reply = worker.request(big, 120);
    REQUIRE(reply.outcome == WorkerClient::Outcome::Ok);
    CHECK(reply.response["error"]["code"] == "line_too_long");
    reply = worker.request({{"type", "hello"}}, 60);
    REQUIRE(reply.outcome == WorkerClient::Outcome::Ok);
    CHECK(reply.response["ok"] == true);
}

TEST_CASE("stdout noise from the worker's libraries cannot reach the protocol stream")
{
    // A candidate's TorchScript may print (it is refused by the sandbox, but the reference
    // check path and libraries may write to stdout too). Everything the worker writes to fd 1
    // must land on stderr; the response stream stays valid JSON lines.
    WorkerClient worker(kwb::test::findWorker(KWB_WORKER_PATH), {"--tasks-dir", kSource + "/tasks"});
    std::string err;
    REQUIRE(worker.start(&err));
    auto reply = worker.request({{"type", "run_reference"}, {"task", "L1/5"}, {"scale", "smoke"}, {"device", "cpu"}}, 120);
    REQUIRE(reply.outcome == WorkerClient::Outcome::Ok);
    CHECK(reply.response["ok"] == true);
    CHECK(reply.response["finite"] == true);
    worker.stop();
    CHECK_FALSE(worker.running());
}

TEST_CASE("compile ahead: a cubin from `compile` is loaded by `evaluate` without compiling again")
{
    WorkerClient worker(kwb::test::findWorker(KWB_WORKER_PATH), {"--tasks-dir", kSource + "/tasks"});
    std::string err;
    REQUIRE(worker.start(&err));
    const std::string answer = readFile(kSource + "/tests/fixtures/candidates/reference/L2_01.md");
    const std::string cuda = answer.substr(answer.find("```cuda") + 8, answer.find("```", answer.find("```cuda") + 8) - answer.find("```cuda") - 8);
    auto compiled = worker.request({{"type", "compile"}, {"cuda", cuda}, {"arch", "sm_90"}, {"return_cubin", true}}, 120);
    REQUIRE(compiled.outcome == WorkerClient::Outcome::Ok);
    REQUIRE(compiled.response["ok_compile"] == true);
    const std::string cubin = compiled.response["cubin_b64"];
    CHECK(cubin.rfind("f0VMR", 0) == 0); // base64 of "\x7fELF"

    const std::string hash = compiled.response["source_hash"];
    auto shipped = worker.request({{"type", "evaluate"}, {"task", "L2/1"}, {"answer", answer}, {"device", "none"},
                                   {"arch", "sm_90"}, {"cubin_b64", cubin}, {"cubin_arch", "sm_90"},
                                   {"cubin_source_hash", hash}}, 120);
    REQUIRE(shipped.outcome == WorkerClient::Outcome::Ok);
    CHECK(shipped.response["status"] == "no_device");
    CHECK(shipped.response["compile"]["cached"] == true);

    // A cubin for another architecture is not used: the worker compiles for its own.
    auto other = worker.request({{"type", "evaluate"}, {"task", "L2/1"}, {"answer", answer}, {"device", "none"},
                                 {"arch", "sm_90"}, {"cubin_b64", cubin}, {"cubin_arch", "sm_80"},
                                 {"cubin_source_hash", hash}}, 120);
    REQUIRE(other.outcome == WorkerClient::Outcome::Ok);
    CHECK_FALSE(other.response["compile"].contains("cached"));

    // Nor is a cubin for another source (a client whose block extraction drifted).
    auto drifted = worker.request({{"type", "evaluate"}, {"task", "L2/1"}, {"answer", answer}, {"device", "none"},
                                   {"arch", "sm_90"}, {"cubin_b64", cubin}, {"cubin_arch", "sm_90"},
                                   {"cubin_source_hash", "0000000000000000"}}, 120);
    REQUIRE(drifted.outcome == WorkerClient::Outcome::Ok);
    CHECK_FALSE(drifted.response["compile"].contains("cached"));
}

TEST_CASE("a 10 MB answer is a format error, and the worker goes on")
{
    WorkerClient worker(kwb::test::findWorker(KWB_WORKER_PATH), {"--tasks-dir", kSource + "/tasks"});
    std::string err;
    REQUIRE(worker.start(&err));
    std::string answer = "```python\ndef forward(A: Tensor, s: float, p: Dict[str, Tensor]) -> Tensor:\n    return A * s\n```\n";
    answer += std::string(10u << 20, 'x');
    auto reply = worker.request({{"type", "evaluate"}, {"task", "L1/5"}, {"answer", answer}, {"device", "none"}}, 120);
    REQUIRE(reply.outcome == WorkerClient::Outcome::Ok);
    CHECK(reply.response["status"] == "format_error");
    CHECK(reply.response["format_error"]["code"] == "too_large");
    reply = worker.request({{"type", "hello"}}, 60);
    CHECK(reply.response["ok"] == true);
}
