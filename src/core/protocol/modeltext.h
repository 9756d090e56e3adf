#pragma once
// A model response's reasoning section, found by one rule for every reader: the worker's parsers
// (src/worker/answers: the answer is what follows the reasoning) and core's prompts (a previous
// answer or a notes role's text is shown without it). Plain C++, no Qt, as protocollimits.h.
//
// Reasoning models think before they answer, and where the server does not split the thinking
// off (vLLM or SGLang without a reasoning parser, llama.cpp's and Ollama's older defaults) it
// arrives in the text: `<think>…</think>` first (Qwen3), or only the closing `</think>` where the
// chat template opened the section in the prompt (DeepSeek-R1's distills, QwQ). Drafts inside the
// thinking are not the answer: KernelBench's first-block rule would take the first draft. A server
// that does split it off sends it in `reasoning_content` (or `reasoning`); LlmClient stores it as
// a leading `<think>` section, so one stored text holds the whole response and this rule reads both.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kwb {

/// Where a response's reasoning ends: text[0, end) is the section, tags included.
struct ReasoningSection
{
    std::size_t end = 0;
    bool closed = true; ///< false: the section never ends (the response was cut off while thinking)
};

namespace modeltext_detail {

inline bool startsWithNoCase(std::string_view text, std::size_t at, std::string_view tag)
{
    if (at + tag.size() > text.size())
        return false;
    for (std::size_t i = 0; i < tag.size(); ++i) {
        char c = text[at + i];
        if (c >= 'A' && c <= 'Z')
            c = char(c - 'A' + 'a');
        if (c != tag[i])
            return false;
    }
    return true;
}

inline std::size_t findNoCase(std::string_view text, std::string_view tag, std::size_t from = 0)
{
    for (std::size_t at = from; at + tag.size() <= text.size(); ++at)
        if (startsWithNoCase(text, at, tag))
            return at;
    return std::string_view::npos;
}

inline constexpr std::string_view kNames[] = {"think", "thinking"};

/// Where the first line whose text (after spaces or tabs) satisfies `starts(text, at)` has that
/// text, or npos.
template <typename Starts>
std::size_t findLineStart(std::string_view text, Starts starts)
{
    for (std::size_t line = 0; line < text.size();) {
        const std::size_t start = text.find_first_not_of(" \t", line);
        if (start != std::string_view::npos && starts(text, start))
            return start;
        const std::size_t next = text.find('\n', line);
        if (next == std::string_view::npos)
            break;
        line = next + 1;
    }
    return std::string_view::npos;
}

} // namespace modeltext_detail

/// The reasoning section at the start of a response, if it has one:
/// - the response opens (after white space) with `<think>` or `<thinking>`: the section runs to
///   the first matching closing tag, or to the end when there is none (`closed` false);
/// - else a line that starts (after spaces or tabs) with `</think>` or `</thinking>`, with no
///   opening tag anywhere before it, closes a section the chat template opened: everything before
///   the tag is reasoning. Only at a line's start, so an answer that mentions the tag is not cut.
inline std::optional<ReasoningSection> findReasoningSection(std::string_view text)
{
    using namespace modeltext_detail;
    std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos)
        return std::nullopt;
    for (std::string_view name : kNames) {
        const std::string open = "<" + std::string(name) + ">";
        if (!startsWithNoCase(text, first, open))
            continue;
        const std::string close = "</" + std::string(name) + ">";
        const std::size_t at = findNoCase(text, close, first + open.size());
        if (at == std::string_view::npos)
            return ReasoningSection{text.size(), false};
        return ReasoningSection{at + close.size(), true};
    }
    std::string_view name; // of the closing tag found at a line's start
    const std::size_t start = findLineStart(text, [&name](std::string_view t, std::size_t at) {
        for (std::string_view n : kNames)
            if (startsWithNoCase(t, at, "</" + std::string(n) + ">")) {
                name = n;
                return true;
            }
        return false;
    });
    if (start == std::string_view::npos ||
        findNoCase(text.substr(0, start), "<" + std::string(name)) != std::string_view::npos)
        return std::nullopt;
    return ReasoningSection{start + ("</" + std::string(name) + ">").size(), true};
}

/// The response with its reasoning section's characters removed but its line breaks kept: the
/// answer's lines keep the numbers they have in the stored response (the parsers' messages and
/// the window's line marks point into it).
inline std::string blankReasoning(std::string_view text, const std::optional<ReasoningSection>& section)
{
    if (!section)
        return std::string(text);
    std::string out;
    out.reserve(text.size() - section->end + 64);
    for (std::size_t i = 0; i < section->end; ++i)
        if (text[i] == '\n')
            out += '\n';
    out.append(text.substr(section->end));
    return out;
}

/// What the model answered: the response without its reasoning section (empty where the section
/// never ends), for prompts that show an earlier answer or a notes role's text.
inline std::string answerAfterReasoning(std::string_view text)
{
    const auto section = findReasoningSection(text);
    if (!section)
        return std::string(text);
    std::string_view rest = text.substr(section->end);
    const std::size_t start = rest.find_first_not_of(" \t\r\n");
    return start == std::string_view::npos ? std::string() : std::string(rest.substr(start));
}

/// Whether the reasoning section holds a fenced code block (a line starting with ```): where the
/// answer after it has none, the model wrote its code only while thinking (QwQ-32B did so in 207 of
/// 589 responses of Kernel-Coder's runs, then summarised "the provided solution" after the section).
inline bool reasoningHasCodeBlock(std::string_view text, const ReasoningSection& section)
{
    return modeltext_detail::findLineStart(text.substr(0, section.end), [](std::string_view t, std::size_t at) {
               return t.compare(at, 3, "```") == 0;
           }) != std::string_view::npos;
}

/// The parsers' message where the code is only inside the reasoning (reasoningHasCodeBlock).
inline std::string codeOnlyInReasoningMessage()
{
    return "the answer after the reasoning has no code: the code blocks are inside the <think> section, which is "
           "the model's thinking, not its answer. Write the final code after </think>.";
}

/// The parsers' message for a response that is reasoning only (the section never ends).
inline std::string unfinishedReasoningMessage()
{
    return "the response is reasoning only: its <think> section never ends, so no answer follows it (the "
           "model stopped, or ran out of tokens, while thinking). Keep the reasoning short and end it with "
           "</think> before the answer.";
}

} // namespace kwb
