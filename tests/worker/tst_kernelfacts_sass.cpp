// The SASS of the reference L2/1 epilogue (issue 40, item 5): nvdisasm's code for relu_bias_add
// holds its global loads, the max with zero (FMNMX) and its global stores. Needs the toolkit's
// nvdisasm (the GPU machine's full toolkit has it; a CPU machine with NVRTC only does not):
// exit 77 (skipped) without one. Label gpu.
#include "worker/answers/candidateparser.h"
#include "worker/compile/kernelfacts.h"
#include "worker/compile/nvrtccompiler.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

using namespace kwb;

int main()
{
    const std::string nvdisasm = findNvdisasm(nvrtcIncludeDirs());
    if (nvdisasm.empty()) {
        std::printf("skipped: no nvdisasm next to the CUDA toolkit or on PATH (set KWB_NVDISASM)\n");
        return 77;
    }
    std::ifstream in(KWB_SOURCE_DIR "/tests/fixtures/candidates/reference/L2_01.md");
    std::stringstream answer;
    answer << in.rdbuf();
    const ParseResult parsed = parseAnswer(answer.str(), {});
    if (!parsed.ok || !parsed.candidate.hasCuda) {
        std::printf("FAIL: L2_01.md did not parse\n");
        return 1;
    }
    int failures = 0;
    for (const char* arch : {"sm_80", "sm_90"}) {
        const CompileResult r = compileCuda(parsed.candidate.cuda, arch);
        if (!r.ok) {
            std::printf("FAIL: %s: %s\n", arch, r.log.c_str());
            return 1;
        }
        std::vector<KernelFacts> ks = compiledKernelFacts(r, nvdisasm);
        if (ks.size() != 1 || ks[0].name != "relu_bias_add" || !ks[0].sass) {
            std::printf("FAIL: %s: no SASS for relu_bias_add (%s)\n", arch,
                        ks.empty() ? "no kernel" : ks[0].sassNote.c_str());
            return 1;
        }
        const std::string& sass = *ks[0].sass;
        for (const char* op : {"LDG.E", "FMNMX", "STG.E", "EXIT"}) {
            const bool found = sass.find(op) != std::string::npos;
            std::printf("%s %s: %s\n", found ? "ok  " : "FAIL", arch, op);
            failures += !found;
        }
        // instructions only: no nvdisasm offsets or directives
        if (sass.find("/*") != std::string::npos || sass.find(".section") != std::string::npos) {
            std::printf("FAIL: %s: offsets or directives left in the SASS\n", arch);
            ++failures;
        }
    }
    if (failures == 0)
        std::printf("the L2/1 epilogue's SASS holds its loads, FMNMX and stores\n");
    return failures ? 1 : 0;
}
