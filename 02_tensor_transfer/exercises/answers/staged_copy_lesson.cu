// The worked answer of exercise 02 staged_copy: the lesson's copy_pageable_staged (host_memory.cpp)
// behind the exercise's signature (the checker's test: it must print "correct").
#include "staged_copy.h"

#include "host_memory.h"

namespace workbook::transfer::exercise {

void staged_copy(void* dst, const void* src, std::size_t bytes, std::byte* const (&staging)[2], std::size_t chunk,
                 cudaEvent_t const (&done)[2], cudaStream_t stream) {
  copy_pageable_staged(dst, src, bytes, staging, chunk, done, stream);
}

}  // namespace workbook::transfer::exercise
