// Task files (tasks/level*/NN_name.toml, docs/task-format.md): loading and validation.
// No torch and no Qt here, so the loader can be tested and used without either.
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kwb {

// Which dimension values apply: [dims] alone, or [dims] overridden by [smoke].
enum class Scale { Full, Smoke };
Scale parseScale(const std::string& s); // "full" | "smoke"; throws std::invalid_argument
std::string scaleName(Scale s);         // "full" | "smoke"

struct InputSpec
{
    std::string name;
    std::string kind = "tensor";    // tensor | float | int
    std::vector<std::string> shape; // dimension names or integer literals ("1")
    std::string dtype = "float32";
    std::string generator = "rand"; // rand = U[0,1) (KernelBench v0.1) | randn = N(0,1)
    double value = 0;               // float and int kinds
    bool isTensor() const { return kind == "tensor"; }
};

struct ParamSpec
{
    std::string name;               // PyTorch state_dict name
    std::vector<std::string> shape; // empty: a 0-d tensor
    std::string init;               // uniform_fan_in | randn | ones | zeros | constant
    std::vector<std::string> fanIn; // factors of fan_in (uniform_fan_in only)
    double value = 0;               // constant only
    bool buffer = false;            // running state (BatchNorm), not a learned parameter
};

// A shape set (docs/task-format.md, "Shape sets"): other values of the dimensions that size the
// inputs and nothing else, at which correctness is checked besides KernelBench's shape ([dims]).
// The parameters and the constructor arguments do not depend on them, so they are made once.
// A KernelBench-only task's sets override module-level constants of its problem file instead.
struct ShapeSet
{
    std::string name;
    bool heldOut = false;                 // never shown in a prompt
    std::map<std::string, int64_t> full;  // overrides of [dims] (KernelBench only: of module constants)
    std::map<std::string, int64_t> smoke; // overrides at smoke scale (of [smoke], then [dims])
};

struct Task
{
    std::string id, title, source, description, forward, path;
    int level = 0, number = 0;
    std::vector<std::pair<std::string, int64_t>> dims; // file order
    std::map<std::string, int64_t> smoke;              // overrides of dims
    std::vector<InputSpec> inputs;
    std::vector<ParamSpec> params;
    std::optional<double> atol, rtol;
    // KernelBench's constructor arguments, as read: numbers, booleans, {"dim": name}, arrays.
    nlohmann::json initInputs = nlohmann::json::array();
    // Non-empty: the task could not be expressed as a TorchScript forward (the converter's reason,
    // scripts/kernelbench_convert.py). It is listed, but has no forward, inputs or parameters of
    // its own; referencePython holds KernelBench's problem file, the reference in its own format.
    std::string kernelbenchOnly;
    std::string referencePython;
    bool isKernelBenchOnly() const { return !kernelbenchOnly.empty(); }
    // KernelBench's problem file the task comes from, listed as `reference_python` for the study
    // preset's prompts (docs/prompts.md), never run: referencePython for a KernelBench-only task,
    // else kernelbench-src/<source> beside the level folders where loadTaskDir finds it.
    std::string problemFile;
    std::vector<ShapeSet> shapeSets; // besides KernelBench's shape; file order
    // KernelBench only, at a shape set (atShapeSet): the module-level constants get_inputs() runs
    // with in place of the problem file's; empty: KernelBench's own.
    std::map<std::string, int64_t> moduleValues;

    // This task at shape set k's dimensions (both scales), with no shape sets of its own.
    Task atShapeSet(size_t k) const;

    // initInputs with every dimension resolved at scale s (what ModelNew(*init_inputs) gets).
    nlohmann::json initInputValues(Scale s) const;

    int64_t dim(const std::string& name, Scale s) const; // throws std::out_of_range if unknown
    // Entries are dimension names or integer literals; throws std::out_of_range on an unknown name.
    std::vector<int64_t> resolveShape(const std::vector<std::string>& shape, Scale s) const;
    std::vector<int64_t> inputShape(size_t i, Scale s) const;
    std::vector<int64_t> paramShape(size_t i, Scale s) const;
    // Product of the param's fan_in factors; throws std::logic_error if it has none.
    double fanIn(size_t paramIndex, Scale s) const;
    // Element counts: learned parameters only, or buffers only.
    int64_t parameterCount(Scale s) const;
    int64_t bufferCount(Scale s) const;
};

// Elements of a shape; throws std::overflow_error past int64.
int64_t numel(const std::vector<int64_t>& shape);

// A problem in one task file. field is a path inside the file ("inputs[0].shape[2]", "dims.N");
// it is empty for problems of the whole file (unreadable, TOML syntax).
// It derives from std::exception so a generic handler reports it too (what() = toString()).
struct TaskLoadError : std::exception
{
    std::string path, field, message;
    TaskLoadError() = default;
    TaskLoadError(std::string path, std::string field, std::string message);
    std::string toString() const; // "path: field: message" ("path: message" when field is empty)
    const char* what() const noexcept override { return what_.c_str(); }

private:
    std::string what_;
};

struct TaskSet
{
    std::vector<Task> tasks;           // sorted by (level, number)
    std::vector<TaskLoadError> errors; // one per bad file (the first problem found in it)
    const Task* find(const std::string& id) const;
};

Task loadTaskFile(const std::string& path); // throws TaskLoadError (the first problem found)
// Every *.toml under dir, recursively. A bad file goes to errors and never stops the others;
// a duplicate id is an error of the later file (in path order).
TaskSet loadTaskDir(const std::string& dir);

// All fields; dims as an ordered list of {name, full, smoke}; shapes also resolved per scale.
nlohmann::json toJson(const Task& t);

int dtypeSize(const std::string& dtype); // bytes per element; throws std::invalid_argument
bool isKnownDtype(const std::string& dtype);

} // namespace kwb
