// libFuzzer target: a prompt template set whose text is the input, loaded (TemplateSet) and
// rendered (PromptRenderer, our tag walk then kainjow's renderer) against the context a real run
// builds. The input is split at NUL bytes: the first piece is the role template
// zero-shot/generator.mustache, the next ones the shipped partials' names in order (a piece
// that is not there leaves that partial missing). Templates are user-edited text, and partials
// quote model answers and worker messages; nothing in them may crash or hang the workbench.
#include "core/prompts/promptrenderer.h"
#include "core/prompts/templateset.h"

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace kwb;

namespace {

// The partials of prompts/partials, so the shipped templates used as seeds resolve
// (tests/fuzz/make-seeds.py reads this list).
const char* const kPartials[] = {"competence", "contract", "evaluation", "previous_answer", "reference", "top_ops"};
constexpr int kPartialCount = int(sizeof kPartials / sizeof kPartials[0]);
const QString kRole = QStringLiteral("zero-shot/generator.mustache");

QJsonObject parse(const char* text)
{
    return QJsonDocument::fromJson(QByteArray(text)).object();
}

// L2/1 as the worker reports it, with a retry's feedback (tests/unit/tst_promptrenderer.cpp).
const char* kTask = R"({"id":"L2/1","level":2,"number":1,"title":"Conv2d, ReLU, bias add",
 "source":"level2/1_Conv2D_ReLU_BiasAdd.py","description":"Conv2d (64 -> 128, kernel 3), ReLU, then a per-channel bias.",
 "forward":"\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    x = torch.conv2d(x, p[\"conv.weight\"], p[\"conv.bias\"], [1, 1], [0, 0], [1, 1], 1)\n    x = torch.relu(x)\n    return x + p[\"bias\"]\n",
 "dims":[{"name":"N","full":128,"smoke":2}],
 "inputs":[{"name":"x","kind":"tensor","shape":["N","C_in","H","W"],"full":[128,64,128,128],"smoke":[2,64,12,12],"dtype":"float32","generator":"rand"}],
 "params":[{"name":"conv.weight","shape":["C_out","C_in","K","K"],"full":[128,64,3,3]},
           {"name":"conv.bias","shape":["C_out"],"full":[128]},
           {"name":"bias","shape":["C_out",1,1],"full":[128,1,1]}]})";
const char* kAnalyze = R"({"task":"L2/1","scale":"full","output_shape":[128,128,126,126],
 "ops":[{"index":0,"op":"aten::conv2d","category":"conv","inputs":[[128,64,128,128],[128,64,3,3],[128]],"output":[128,128,126,126],"flops":239767683072,"bytes":654311424},
        {"index":1,"op":"aten::relu","category":"elementwise","inputs":[[128,128,126,126]],"output":[128,128,126,126],"flops":260112384,"bytes":2080899072},
        {"index":2,"op":"aten::add","category":"elementwise","inputs":[[128,128,126,126],[128,1,1]],"output":[128,128,126,126],"flops":260112384,"bytes":2080899584}],
 "flops":240287907840,"bytes_unfused":4816110080,"bytes_fused":1575010816,"intensity_unfused":49.89,"intensity_fused":152.56})";
const char* kProfile = R"({"task":"L2/1","total_ns":9120000,
 "ops":[{"index":0,"op":"aten::conv2d","time_ns":7413000,"share":0.8128,"kernels":2},
        {"index":2,"op":"aten::add","time_ns":860000,"share":0.0943,"kernels":1},
        {"index":1,"op":"aten::relu","time_ns":847000,"share":0.0929,"kernels":1}],"kernels":[]})";
const char* kDevice = R"({"available":true,"name":"NVIDIA H200","cc":"9.0","arch":"sm_90","sm_count":132,
 "sm_clock_khz":1980000,"hbm_theoretical_gbps":4800,
 "ceilings":{"hbm_copy_gbps":4010.5,"fp32_fma_gflops":51200.0}})";
const char* kFeedback = R"({"status":"compile_error","stage":"compile","message":"NVRTC failed: 1 error",
 "compile":{"ok":false,"log":"candidate.cu(3): error: identifier \"INFINITY\" is undefined","arch":"sm_90"},
 "answer":"```cuda\nextern \"C\" __global__ void k(float* y) { y[0] = INFINITY; }\n```\n\n```python\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    return x\n```"})";

QString g_dir; // this process's set
QJsonObject g_context;

void writeOrRemove(const QString& path, const char* data, std::size_t size, bool present)
{
    if (!present) {
        QFile::remove(path);
        return;
    }
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        std::abort();
    f.write(data, qint64(size));
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    // /dev/shm when there is one: the set is rewritten for every input. A crashing run leaves
    // its folder behind (that is what fuzzing is for), so the folders of dead runs go first.
    const QString base = QDir(QStringLiteral("/dev/shm")).exists() ? QStringLiteral("/dev/shm") : QDir::tempPath();
    const QString prefix = QStringLiteral("kwb-fuzz-templates-");
    for (const QString& stale : QDir(base).entryList({prefix + QStringLiteral("*")}, QDir::Dirs)) {
        bool isPid = false;
        const qint64 pid = stale.mid(prefix.size()).toLongLong(&isPid);
        if (isPid && pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH)
            QDir(base + QLatin1Char('/') + stale).removeRecursively();
    }
    g_dir = base + QLatin1Char('/') + prefix + QString::number(::getpid());
    QDir(g_dir).removeRecursively();
    if (!QDir(g_dir).mkpath(QStringLiteral("zero-shot")) || !QDir(g_dir).mkpath(QStringLiteral("partials")))
        std::abort();
    std::atexit([] { QDir(g_dir).removeRecursively(); });
    g_context =
        PromptRenderer::buildContext(parse(kTask), parse(kAnalyze), parse(kProfile), parse(kDevice), parse(kFeedback));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const char* text = reinterpret_cast<const char*>(data);
    const QDir dir(g_dir);
    std::size_t pos = 0;
    bool more = true; // a piece starts at pos
    for (int i = -1; i < kPartialCount; ++i) {
        const QString rel = i < 0 ? kRole : QStringLiteral("partials/%1.mustache").arg(QLatin1String(kPartials[i]));
        if (!more) {
            writeOrRemove(dir.filePath(rel), nullptr, 0, false);
            continue;
        }
        const void* cut = size > pos ? std::memchr(text + pos, '\0', size - pos) : nullptr;
        const std::size_t pieceEnd = cut ? std::size_t(static_cast<const char*>(cut) - text) : size;
        writeOrRemove(dir.filePath(rel), text + pos, pieceEnd - pos, true);
        more = cut != nullptr;
        pos = pieceEnd + 1;
    }

    const TemplateSet set(g_dir);
    for (const QString& t : set.templates())
        (void)set.load(t);
    PromptRenderer renderer(g_dir);
    (void)renderer.render(kRole, g_context);
    renderer.setStrict(false);
    (void)renderer.render(kRole, g_context);
    return 0;
}
