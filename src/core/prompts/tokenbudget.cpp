#include "core/prompts/tokenbudget.h"

#include <cmath>

namespace kwb {

int estimateTokens(const QString& text)
{
    return int(std::ceil(double(text.size()) / kEstimatedCharsPerToken));
}

QString ContextBudget::overBudget(const QString& task, int turn, const QString& role, const QString& templatePath,
                                  int promptTokens, bool countedByServer) const
{
    return QStringLiteral("over the context budget: task %1, turn %2, role %3 (%4): prompt %5 tokens (%6) + %9 chat "
                          "template + %7 max output tokens > %8 "
                          "context tokens")
        .arg(task)
        .arg(turn)
        .arg(role, templatePath)
        .arg(promptTokens)
        .arg(countedByServer ? QStringLiteral("counted by the server") : QStringLiteral("estimated"))
        .arg(maxOutputTokens)
        .arg(contextTokens)
        .arg(kChatTemplateTokens);
}

} // namespace kwb
