# Warnings and sanitizers shared by every ferry target.
if(FERRY_SANITIZE)
  add_compile_options(-fsanitize=${FERRY_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${FERRY_SANITIZE})
endif()

function(ferry_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic
                         $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-Wshadow=local>
                         $<$<BOOL:${FERRY_WERROR}>:-Werror>)
endfunction()
