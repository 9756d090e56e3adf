// libFuzzer target: a model's whole Markdown answer through the candidate parser
// (candidateparser.h), as the evaluator parses it, then the parser's pieces on what it found.
// Nothing here may crash, hang or overrun, for any answer (docs/security.md).
#include "worker/answers/candidateparser.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string answer(reinterpret_cast<const char*>(data), size);
    // L1/5's signature (a tensor, a float and the parameter dict) and "not checked".
    static const std::vector<kwb::SigParam> expected = {{"A", "Tensor"}, {"s", "float"}, {"p", "Dict[str, Tensor]"}};
    for (const auto* sig : {&expected, static_cast<const std::vector<kwb::SigParam>*>(nullptr)}) {
        const kwb::ParseResult r = kwb::parseAnswer(answer, sig ? *sig : std::vector<kwb::SigParam>{});
        (void)kwb::formatSignature(r.candidate.forwardSignature);
    }
    // The pieces on the raw text too: a block's content can be anything the answer holds.
    std::string error;
    (void)kwb::parseForwardSignature(answer, &error);
    (void)kwb::findKernels(answer);
    return 0;
}
