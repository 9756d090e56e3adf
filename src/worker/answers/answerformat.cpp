#include "worker/answers/answerformat.h"
#include "core/protocol/modeltext.h"
#include "core/protocol/protocolnames.h"

#include <regex>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace kwb {

std::string answerFormatName(AnswerFormat f)
{
    return f == AnswerFormat::KernelBench ? "kernelbench" : "native";
}

std::optional<AnswerFormat> requestedAnswerFormat(const nlohmann::json& request)
{
    auto it = request.find(ProtocolNames::Field::kAnswerFormat);
    if (it == request.end() || it->is_null())
        return std::nullopt;
    if (it->is_string() && *it == "native")
        return AnswerFormat::Native;
    if (it->is_string() && *it == "kernelbench")
        return AnswerFormat::KernelBench;
    throw std::invalid_argument(
        "answer_format must be \"native\" or \"kernelbench\" (or absent: detected from the answer)");
}

std::string codeBlockName(CodeBlock c)
{
    return c == CodeBlock::Last ? "last" : "first";
}

CodeBlock requestedCodeBlock(const nlohmann::json& request)
{
    auto it = request.find(ProtocolNames::Field::kCodeBlock);
    if (it == request.end() || it->is_null())
        return CodeBlock::First;
    if (it->is_string() && *it == "first")
        return CodeBlock::First;
    if (it->is_string() && *it == "last")
        return CodeBlock::Last;
    throw std::invalid_argument("code_block must be \"first\" or \"last\" (or absent: first)");
}

namespace {

// `class ModelNew` (indented too: a class inside a fence's indented block), or the module's own
// top-level binding of the name (`ModelNew = Model`, DeepSeek-V4-Pro's L3/44, which KernelBench
// loads: it takes whatever the module binds to ModelNew).
const std::regex& modelNewLine()
{
    static const std::regex re(R"(^[ \t]*class[ \t]+ModelNew\b|^ModelNew[ \t]*(:[^=\n]*)?=[^=])");
    return re;
}

std::vector<std::string> lines(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) {
        if (!l.empty() && l.back() == '\r')
            l.pop_back();
        out.push_back(l);
    }
    return out;
}

bool definesModelNew(const std::vector<std::string>& ls, size_t from, size_t to)
{
    for (size_t i = from; i < to; ++i)
        if (std::regex_search(ls[i], modelNewLine()))
            return true;
    return false;
}

// "```python" -> "python"; nullopt for a line that is not a fence.
std::optional<std::string> fenceTag(const std::string& line)
{
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line.compare(i, 3, "```") != 0)
        return std::nullopt;
    std::string tag = line.substr(i + 3);
    const size_t end = tag.find_last_not_of(" \t");
    tag = end == std::string::npos ? "" : tag.substr(0, end + 1);
    return tag;
}

} // namespace

AnswerFormat detectAnswerFormat(const std::string& answer)
{
    // A ModelNew drafted while reasoning does not make the answer KernelBench's.
    const auto ls = lines(blankReasoning(answer, findReasoningSection(answer)));
    return definesModelNew(ls, 0, ls.size()) ? AnswerFormat::KernelBench : AnswerFormat::Native;
}

KernelBenchSource extractKernelBenchSource(const std::string& response, CodeBlock which)
{
    KernelBenchSource out;
    if (response.size() > kMaxAnswerBytes) {
        out.error =
            FormatError{"too_large", "the answer is larger than " + std::to_string(kMaxAnswerBytes) + " bytes", 0};
        return out;
    }
    // The blocks are looked for after a reasoning section (core/protocol/modeltext.h), on the
    // response's own line numbers.
    const auto reasoning = findReasoningSection(response);
    if (reasoning && !reasoning->closed) {
        out.error = FormatError{"reasoning_unfinished", unfinishedReasoningMessage(), 1};
        return out;
    }
    const std::string answer = blankReasoning(response, reasoning);
    const auto ls = lines(answer);
    bool anyFence = false;
    size_t takenOpen = 0, takenClose = 0; // the fence lines of the block taken
    for (size_t i = 0; i < ls.size(); ++i) {
        auto tag = fenceTag(ls[i]);
        if (!tag)
            continue;
        anyFence = true;
        size_t close = i + 1;
        while (close < ls.size() && !(fenceTag(ls[close]) && fenceTag(ls[close])->empty()))
            ++close;
        if (close == ls.size()) {
            // Cut off (often: the model ran out of tokens). The blocks before it stand.
            if (out.modelNewBlocks > 0)
                break;
            out.error = FormatError{
                "unclosed_fence",
                "the code block opened on line " + std::to_string(i + 1) + " is never closed with ```", int(i + 1)};
            return out;
        }
        if ((*tag == "python" || *tag == "py" || tag->empty()) && definesModelNew(ls, i + 1, close)) {
            if (out.modelNewBlocks++ == 0 || which == CodeBlock::Last) {
                takenOpen = i;
                takenClose = close;
            }
        }
        i = close;
    }
    if (out.modelNewBlocks > 0) {
        for (size_t k = takenOpen + 1; k < takenClose; ++k)
            out.source += ls[k] + "\n";
        out.line = int(takenOpen + 2);
        out.ok = true;
        return out;
    }
    if (!anyFence && definesModelNew(ls, 0, ls.size())) {
        out.source = answer;
        out.line = 1;
        out.ok = true;
        return out;
    }
    if (reasoning && reasoningHasCodeBlock(response, *reasoning)) {
        out.error = FormatError{"code_only_in_reasoning", codeOnlyInReasoningMessage(), 1};
        return out;
    }
    out.error =
        FormatError{"no_model_new",
                    "no ```python block defines class ModelNew: a KernelBench-format answer is one Python module "
                    "with class ModelNew(nn.Module), its CUDA built with torch.utils.cpp_extension.load_inline",
                    0};
    return out;
}

} // namespace kwb
