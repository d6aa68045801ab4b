// The flatbuffers code flatc generates from message.fbs (and schema.fbs), behind one include so
// that the generated headers stay out of the source tree and out of the public headers.
#pragma once

#include "fbs/file_generated.h"
#include "fbs/message_generated.h"
#include "fbs/schema_generated.h"
