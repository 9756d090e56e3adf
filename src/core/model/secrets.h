#pragma once
// The credentials the workbench holds (the model server's API key, from the settings, the
// command line or $KWB_API_KEY), and the one scrubber for them. Everything the model is shown
// (rendered prompts, PromptRenderer) and everything a run keeps (RunStore: prompts, responses,
// candidates, evaluations) passes through scrub(), so a key that reached a compile log or a
// worker message is replaced by kRedacted before it leaves the process or lands on disk.
// Defence in depth: the worker gets no such key in its environment and NVRTC no such include.
//
// Where a key comes from the environment or the command line, it is taken into this process's
// memory at start and removed from both (takeSecretsFromEnvironment, takeSecretsFromArguments,
// issue 32): kwb, kernel-workbench and the programs beside them call these first thing in main(),
// so /proc/<pid>/environ and /proc/<pid>/cmdline show no key, even to a candidate that got past
// the sandbox. Every reader of $KWB_API_KEY then reads environmentApiKey().

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
/// What is scrubbed now: every remembered value (the taken ones among them), longest first.
QStringList known();
/// The text with every known secret replaced by kRedacted.
QString scrub(const QString& text);
/// Every string inside (keys and values), scrubbed.
QJsonValue scrub(const QJsonValue& value);
QJsonObject scrub(const QJsonObject& object);

/// The environment variables taken at start: KWB_API_KEY and every other name ending in _API_KEY
/// (OPENAI_API_KEY, …: a model server's key). Other secrets of the user's (…_TOKEN, AWS_*, SLURM_JWT)
/// stay: ssh and srun, which kwb starts for remote workers, may need them, and the worker never
/// gets them (workerEnvironment()).
bool isTakenFromEnvironment(const QString& name);

/// Moves every variable isTakenFromEnvironment() names out of the process environment: the value
/// is kept in memory (environmentApiKey() for KWB_API_KEY; every one is remembered for scrub()),
/// the variable unset (so no child inherits it), and on Linux its value's bytes in the initial
/// environment block, the memory /proc/<pid>/environ shows, overwritten with NULs (unsetenv alone
/// leaves them there). Call it first thing in main(), before any thread exists: the environment
/// has no lock against a reader on another thread. Later calls take what has been set since
/// (tests); a later KWB_API_KEY replaces the value held. Returns the names taken.
QStringList takeSecretsFromEnvironment();

/// The same for the command line: the value of every `--api-key VALUE` and `--api-key=VALUE` in
/// argv is remembered, argv[i] pointed at a copy of the string (so Qt and CLI11 read it as before)
/// and, on Linux, the original bytes, the memory /proc/<pid>/cmdline shows, overwritten with '*'.
/// Call it before anything reads argv. Returns how many values were taken.
int takeSecretsFromArguments(int argc, char** argv);

/// $KWB_API_KEY as it was when takeSecretsFromEnvironment() took it; empty when it was unset (or
/// nothing took it). The one reading of the variable.
QString environmentApiKey();

} // namespace kwb::secrets
