#pragma once
// An empty file of the tests' own under /tmp (mkstemp), removed when the object goes: the quiet
// lock's tests and the worker's --gpu-quiet-lock checks need a real file to flock.
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace kwb::test {

struct TempFile
{
    std::string path; ///< empty when the file could not be made
    explicit TempFile(const std::string& prefix)
    {
        std::string name = "/tmp/" + prefix + "-XXXXXX";
        const int fd = ::mkstemp(name.data());
        if (fd < 0)
            return;
        ::close(fd);
        path = name;
    }
    ~TempFile()
    {
        if (!path.empty())
            ::unlink(path.c_str());
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
};

} // namespace kwb::test
