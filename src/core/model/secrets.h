#pragma once
// The credentials the workbench holds (the model server's API key, from the settings, the
// command line or $KWB_API_KEY), and the one scrubber for them. Everything the model is shown
// (rendered prompts, PromptRenderer) and everything a run keeps (RunStore: prompts, responses,
// candidates, evaluations) passes through scrub(), so a key that reached a compile log or a
// worker message is replaced by kRedacted before it leaves the process or lands on disk.
// Defence in depth: the worker gets no such key in its environment and NVRTC no such include.

#include <QJsonObject>
#include <QJsonValue>
#include <QString>
#include <QStringList>

namespace kwb::secrets {

inline const QString kRedacted = QStringLiteral("[redacted]");
/// Shorter values are not scrubbed: they cannot be told apart from ordinary text (every "abc"
/// of a prompt would go), and no server issues keys that short.
constexpr int kMinSecretChars = 4;

/// Adds a credential to scrub for the rest of the process (empty or short values are ignored).
void remember(const QString& secret);
/// What is scrubbed now: every remembered value and $KWB_API_KEY, longest first.
QStringList known();
/// The text with every known secret replaced by kRedacted.
QString scrub(const QString& text);
/// Every string inside (keys and values), scrubbed.
QJsonValue scrub(const QJsonValue& value);
QJsonObject scrub(const QJsonObject& object);

} // namespace kwb::secrets
