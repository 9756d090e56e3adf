#pragma once
// A prompt's size against the model's context (docs/prompts.md §Context budget): a prompt plus the
// answer's max_tokens must fit the context length, or the prompt is refused before it is sent,
// never cut. The server's tokenizer counts where it has one (LlmClient::countTokens: POST
// /tokenize, as vLLM and llama.cpp serve it); otherwise the estimate below, stated as such.

#include <QString>

namespace kwb {

/// The estimate's rate: code and English run about 3.2 to 4 characters a token under the BPE
/// tokenizers of current code models, so 3.2 over-counts rather than under.
constexpr double kEstimatedCharsPerToken = 3.2;
/// ceil(characters / kEstimatedCharsPerToken).
int estimateTokens(const QString& text);

/// What a chat template adds around one user message (Qwen2.5's, with its default system
/// prompt, about 30 tokens): added to server counts and estimates alike.
constexpr int kChatTemplateTokens = 64;

struct ContextBudget
{
    int contextTokens = 0;   ///< 0: no check
    int maxOutputTokens = 0; ///< the answer's max_tokens

    bool enabled() const { return contextTokens > 0; }
    /// promptTokens: the prompt's text; the chat template's kChatTemplateTokens are added here.
    bool fits(int promptTokens) const
    {
        return !enabled() || qint64(promptTokens) + kChatTemplateTokens + maxOutputTokens <= contextTokens;
    }
    /// "over the context budget: task L3/10, turn 2, role generator (agent/generator.mustache): prompt 31000 tokens
    /// (estimated) + 64 chat template + 4096 max output tokens > 32768 context tokens".
    QString overBudget(const QString& task, int turn, const QString& role, const QString& templatePath,
                       int promptTokens, bool countedByServer) const;
};

} // namespace kwb
