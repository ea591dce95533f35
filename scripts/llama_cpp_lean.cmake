# Included just before llama.cpp's project() when set-up builds llama-cpp-python
# (-DCMAKE_PROJECT_llama.cpp_INCLUDE_BEFORE=this file). The Python package loads only
# libllama and libggml*; llama-cpp-python also forces llama.cpp's common library on and
# builds the multimodal library, neither of which the workbench loads. Without them the
# build takes half the time (docs/setup.md#building-llama-cpp-python).
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "the workbench never loads libllama-common" FORCE)
set(LLAVA_BUILD OFF CACHE BOOL "the workbench never loads libmtmd" FORCE)
