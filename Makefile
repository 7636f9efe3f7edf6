# 《从零构建 Transformer》—— 两个主命令：make book（构建网站）与 make test（运行全部检查）。
# 在只有 Python 3.11、make 和 apt 的新机器上，它们会自己装好所需的一切（项目虚拟环境 .venv）。
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
HTML   := _build/html
SHELL  := /bin/bash
JCACHE := _build/.jupyter_cache
JOBS   ?= 2

.PHONY: help install book pdf student-book test unit numerics nbval browser bench clean vendor checkpoints

help:
	@echo "make book   构建网站到 $(HTML)（执行全部笔记本）"
	@echo "make test   单元测试（敏感的再换一条 CPU 路径跑）+ nbval 逐格执行每一章 + 严格构建网站 + 浏览器测试"
	@echo "make pdf    把网站排成一本 PDF 到 $(PDF)（前言 + 16 章 + 自测答案；网站的下载按钮随后指向它）"
	@echo "make book STUDENT=1（或 make student-book）  用学生版笔记本（没有参考答案）构建网站到 $(STUDENT_HTML)"
	@echo "make bench  各章的运行时间与预算（一章接一章地执行；只量几章：make bench CH=\"13 15\"）"
	@echo "make checkpoints  重新训练课程自己的模型（第 13–16 章载入的检查点；空闲的 2 核上约三个多小时）"
	@echo "make clean  删除构建产物（保留 .venv）"

$(STAMP): requirements.txt constraints.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# 先单独装 CPU 版 torch（不带版本时 pip 会拉取几 GB 的 CUDA 版）
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -r requirements.txt -c constraints.txt
	$(BIN)/pip install -q --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	touch $@

install: $(STAMP)

# 缓存只认笔记本本身的改动：src/ 一变就清空 jupyter-cache 与 doctrees，让笔记本按新代码重新执行。
_build/.src-hash: FORCE
	@mkdir -p _build
	@h=$$(find src -type f -name '*.py' -o -type f -name '*.js' -o -type f -name '*.css' | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16); \
	if [ "$$(cat $@ 2>/dev/null)" != "$$h" ]; then rm -rf $(JCACHE) _build/.doctrees; echo $$h > $@; fi
FORCE:

# 学生版网站：每章换成 tfcourse assign 的学生版笔记本（去掉参考答案单元），另起一份源文件与执行缓存，
# 构建完检查网页与可下载的源文件里没有一行参考答案。默认的 make book 仍是自学版（答案折叠）。
STUDENT_SRC  := _build/student
STUDENT_HTML := $(STUDENT_SRC)/_build/html

student-book: $(STAMP)
	tools/system-deps.sh fonts
	$(BIN)/python tools/student_book.py prepare $(STUDENT_SRC)
	TFCOURSE_STRICT_FONTS=1 $(BIN)/jupyter-book build $(STUDENT_SRC) --builder html -W -n --keep-going
	$(BIN)/python tools/student_book.py scan $(STUDENT_HTML)
	@echo "学生版网站已生成：$(STUDENT_HTML)/index.html"

ifeq ($(STUDENT),1)
book: student-book
else
book: $(STAMP) _build/.src-hash
	tools/system-deps.sh fonts
	$(BIN)/python tools/nbtool.py check
	TFCOURSE_STRICT_FONTS=1 $(BIN)/jupyter-book build . --builder html -W -n --keep-going 2>&1 | tee _build/book.log; \
	  test $${PIPESTATUS[0]} -eq 0
	@echo "网站已生成：$(HTML)/index.html"
endif

# 整本书的 PDF：先构建网站，用 Chromium 把各章排成一本（tools/pdf.py），并用 tests/browser/test_pdf.py 的
# 全部检查核对整本书（make test 只排三章来查同样的东西），再构建一次网站——
# 这一次只重写网页（笔记本不再执行），页眉的下载菜单里多出「整本书 PDF」。
# 文件名在 book/_ext/tfcourse_site.py（PDF_NAME）
PDF := _build/pdf/transformer-from-scratch.pdf
pdf: $(STAMP)
	tools/system-deps.sh fonts browser pdf
	$(MAKE) book
	TFCOURSE_PDF_CHAPTERS=all TFCOURSE_PDF_OUT=$(CURDIR)/$(PDF) $(BIN)/pytest -q tests/browser/test_pdf.py
	$(MAKE) book
	@echo "PDF 已生成：$(PDF)（网站里的副本：$(HTML)/$(notdir $(PDF))）"

unit: $(STAMP)
	$(BIN)/pytest -q -n $(JOBS) tests -m "not browser"

# 对浮点舍入敏感的测试（标记 numerics）在 torch 的另一条 CPU 代码路径上再跑一遍：本机默认走 AVX-512 时
# 换 AVX2 内核，默认就是 AVX2 时换不向量化的 default 内核（make numerics CPU_PATHS="avx2 default" 两条都跑）。
CPU_PATHS ?= second
numerics: $(STAMP)
	@native=$$($(BIN)/python -c "import torch; print(torch.backends.cpu.get_cpu_capability().lower())"); \
	paths="$(CPU_PATHS)"; \
	if [ "$$paths" = second ]; then if [ "$$native" = avx2 ]; then paths=default; else paths=avx2; fi; fi; \
	for cap in $$paths; do \
	  if [ "$$cap" = "$$native" ]; then echo "ATEN_CPU_CAPABILITY=$$cap 是本机的默认路径，单元测试已经跑过"; continue; fi; \
	  echo "ATEN_CPU_CAPABILITY=$$cap"; \
	  ATEN_CPU_CAPABILITY=$$cap $(BIN)/pytest -q -n $(JOBS) tests -m "numerics and not browser" || exit 1; \
	done

# nbval 逐格执行每一章；执行结果同时存进 jupyter-cache，随后的网站构建直接复用（每章只执行一次）。
# 两个 xdist 进程同时各执行一章（--dist loadscope：一个笔记本的全部单元在同一个进程、同一个内核里）；
# 重的章排在前面（--no-loadscope-reorder 按这里的顺序派发），两个进程差不多同时做完。
# 两章同时执行时每章只分到约一个核，章末打印的时间偏大：各章是否在预算之内由 make bench 量（一章接一章）。
# OMP_WAIT_POLICY=PASSIVE：两个内核的 OpenMP 线程加起来多于核数时，空等的线程让出 CPU 而不是原地空转
# （不设时，两章同时训练会慢上好几倍）；一章独占机器时不设它，那样更快。
NB_ALL   := $(sort $(wildcard book/p*/ch*.ipynb))
NB_FIRST := $(foreach c,15 13 10 14 12 04 01 16,$(wildcard book/p*/ch$(c)-*.ipynb))
NB_ORDER := $(NB_FIRST) $(filter-out $(NB_FIRST),$(NB_ALL))
NBVAL := OMP_WAIT_POLICY=PASSIVE PYTHONPATH=tools $(BIN)/pytest -q -p nbval_cache --nbval-lax --nb-cache $(JCACHE) \
         -n $(JOBS) --dist loadscope --no-loadscope-reorder
FRESH := rm -rf _build/.doctrees

nbval: $(STAMP) _build/.src-hash
	TFCOURSE_STRICT_FONTS=1 $(NBVAL) $(NB_ORDER)
	$(FRESH)

# 浏览器测试按文件分给两个进程（--dist loadfile：同一个文件里共用的页面与巡视只在一个进程里做一次）
BROWSER := $(BIN)/pytest -q --durations=15 -n $(JOBS) --dist loadfile tests -m browser

browser: $(STAMP)
	tools/system-deps.sh browser
	$(BROWSER)

# 各章的运行时间与预算（基准，不是测试）：一章接一章地执行，每章独占全部核；只量几章：make bench CH="13 15"
bench: $(STAMP)
	$(BIN)/python tools/bench.py run $(CH)

test: $(STAMP) _build/.src-hash
	tools/system-deps.sh fonts browser sandbox pdf
	$(BIN)/python tools/nbtool.py check
	TFCOURSE_STRICT_FONTS=1 $(BIN)/pytest -q --durations=15 -n $(JOBS) tests -m "not browser"
	$(MAKE) numerics
	TFCOURSE_STRICT_FONTS=1 $(NBVAL) $(NB_ORDER)
	$(FRESH)
	$(MAKE) book
	@if grep -q "Executing notebook" _build/book.log; then \
	  echo "错误：网站构建又执行了一遍笔记本（nbval 的执行结果没有进缓存）"; exit 1; fi
	@n=$$(ls book/p*/ch*.ipynb | wc -l); c=$$(grep -c "Using cached notebook" _build/book.log); \
	if [ "$$c" -ne "$$n" ]; then \
	  echo "错误：$$n 章里只有 $$c 章用上了本次 nbval 的执行结果（其余网页是旧的）"; exit 1; fi
	$(BROWSER)
	@$(BIN)/python tools/bench.py summary

# 课程自己的模型：多个模型 × 多个种子，一章的预算里训练不完，由这条命令训练并写进
# src/tfcourse/checkpoints/（每个检查点带 SHA-256，训练记录在它的 meta 里）。只重训几个：make checkpoints CKPT="bert-zh gpt-zh"
checkpoints: $(STAMP)
	$(BIN)/python tools/checkpoints.py $(CKPT)

vendor:
	tools/vendor.sh

clean:
	rm -rf _build .pytest_cache
