// needle_verb.cpp - sparda-forecast needle: needle-task documents as text
// (one paragraph each) for nk-lm corpus --text --paragraphs, so a model
// learns to fetch a fact from far back (see needle.hpp).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "sparda-forecast/needle.hpp"
#include "sparda-forecast/sparda.hpp"

namespace sparda {

void needle(const NeedleOptions& o, const nk::RunEnv& env) {
  const NeedleSource source = NeedleSource::load();
  const bool evaluation = o.split == "eval";
  std::unique_ptr<nk::AtomicFile> file;
  std::ofstream stream;
  if (o.output != "-") {
    file = std::make_unique<nk::AtomicFile>(o.output, o.no_clobber);
    stream.open(file->temp_path(), std::ios::binary);
    if (!stream) throw nk::io_error(o.output, "cannot write");
  }
  std::ostream& out = o.output == "-" ? std::cout : stream;
  nk::Progress progress("needle", o.docs);
  int64_t bytes = 0;
  for (int64_t i = 0; i < o.docs; ++i) {
    const NeedleDoc doc = needle_doc(source, evaluation, o.chars, o.facts, env.seed, i);
    out << doc.text << "\n\n";
    bytes += static_cast<int64_t>(doc.text.size()) + 2;
    progress.update(i + 1);
  }
  progress.finish();
  out.flush();
  if (!out) throw nk::io_error(o.output, "write failed");
  if (file) {
    stream.close();
    file->commit();
  }
  spdlog::info(
      "needle: {} {} documents of {} facts, {:.1f} MB ({} training keys, {} evaluation keys, {} filler entries)",
      o.docs, o.split, o.facts, static_cast<double>(bytes) / 1e6, source.train_keys.size(), source.eval_keys.size(),
      source.filler.size());
}

}  // namespace sparda
