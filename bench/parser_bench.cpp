// How long the candidate parser takes on answers of the largest accepted size, in the shapes of
// tests/worker/answershapes.h (the ones that were quadratic or could recurse deeply).
// Usage: kwb-bench-parser [BYTES]   (default: kMaxAnswerBytes). Prints a Markdown table.
#include "answershapes.h"
#include "worker/answers/candidateparser.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv)
{
    const std::size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : kwb::kMaxAnswerBytes;
    const std::vector<kwb::SigParam> expected = {{"x", "Tensor"}, {"p", "Dict[str, Tensor]"}};
    std::printf("| shape | bytes | ms (best of 3) | result |\n|---|---:|---:|---|\n");
    double worst = 0;
    for (const auto& [name, answer] : kwb::test::answerShapes(bytes)) {
        double best = 1e300;
        std::string result;
        for (int rep = 0; rep < 3; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            const kwb::ParseResult r = kwb::parseAnswer(answer, expected);
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            best = std::min(best, ms);
            result = r.ok ? "ok" : r.error->code;
        }
        worst = std::max(worst, best);
        std::printf("| %s | %zu | %.1f | %s |\n", name.c_str(), answer.size(), best, result.c_str());
        std::fflush(stdout);
    }
    std::printf("\nslowest shape: %.1f ms\n", worst);
    return 0;
}
