// main.cpp - nk-data: import, export, inspect and merge neurkit HDF5 files.
#include "nk/cli.hpp"
#include "nk-data/nk_data.hpp"

int main(int argc, char** argv) {
  nk::cli::App cli("nk-data", "Import, export, inspect and merge neurkit HDF5 files");
  CLI::App& app = cli.app();
  app.require_subcommand(1);

  nk::data::ImportImagesOptions images;
  CLI::App* import = cli.add_verb("import", "Images (PNG, JPEG, PGM, ...) -> /images [N,H,W,C] float32 in [0,1]");
  import->add_option("images", images.inputs, "Image files ('-' = one image on standard input)")->required();
  nk::cli::App::add_output(*import, images.output, images.no_clobber);
  import->add_option("--resize", images.resize, "Resample every image to WxH pixels");
  import->add_option("--channels", images.channels, "auto (RGB if any image has colour), 1 (gray) or 3 (RGB)")
      ->check(CLI::IsMember({"auto", "1", "3"}));

  nk::data::ImportIdxOptions idx;
  CLI::App* import_idx = cli.add_verb("import-idx", "MNIST/Fashion-MNIST IDX files -> /images and /labels");
  import_idx->add_option("images", idx.images, "IDX image file (gzip or raw; '-' = standard input)")->required();
  import_idx->add_option("labels", idx.labels, "IDX label file (gzip or raw; '-' = standard input)");
  nk::cli::App::add_output(*import_idx, idx.output, idx.no_clobber);
  import_idx->add_option("--offset", idx.offset, "First item to import")->check(CLI::NonNegativeNumber);
  import_idx->add_option("--limit", idx.limit, "Import at most this many items (-1 = all)");

  nk::data::ImportCsvOptions csv;
  CLI::App* import_csv = cli.add_verb("import-csv", "A numeric CSV table -> /vectors [N,D] float32");
  import_csv->add_option("table", csv.input, "CSV file ('-' = standard input); a first row of names becomes the 'columns' attribute")
      ->required();
  nk::cli::App::add_output(*import_csv, csv.output, csv.no_clobber);
  import_csv->add_option("--dataset", csv.dataset, "Dataset to write");
  import_csv->add_option("--delimiter", csv.delimiter, "Field separator");

  nk::data::ExportOptions exporting;
  CLI::App* export_verb = cli.add_verb("export", "One item of a dataset -> PNG, or a 1-D/2-D dataset -> CSV");
  export_verb->add_option("input", exporting.input, "HDF5 file ('-' = standard input)")->required();
  nk::cli::App::add_output(*export_verb, exporting.output, exporting.no_clobber, "output PNG or CSV file");
  export_verb->add_option("--dataset", exporting.dataset, "Dataset to export");
  export_verb->add_option("--index", exporting.index, "Item of an [N,...] stack to export");
  export_verb->add_option("--format", exporting.format, "auto (from the output name), png or csv")
      ->check(CLI::IsMember({"auto", "png", "csv"}));
  export_verb->add_flag("--normalize", exporting.normalize, "Scale the item's min..max to 0..1 before encoding");

  nk::data::InfoOptions info;
  CLI::App* info_verb = cli.add_verb("info", "Schema, provenance and every dataset of a file");
  info_verb->add_option("input", info.input, "HDF5 file ('-' = standard input)");
  info_verb->add_option("--format", info.format, "auto (table on a terminal, else tsv), table, tsv or json")
      ->check(CLI::IsMember({"auto", "table", "tsv", "json"}));

  nk::data::MergeOptions merging;
  CLI::App* merge = cli.add_verb("merge", "Concatenate shard outputs of one schema along the first axis");
  merge->add_option("inputs", merging.inputs, "Files to merge (shards are put in shard order)")->required();
  nk::cli::App::add_output(*merge, merging.output, merging.no_clobber);
  merge->add_flag("--allow-partial", merging.allow_partial, "Merge even when some shards of I/N are missing");

  return cli.run(argc, argv, [&] {
    if (*import) {
      nk::data::import_images(images);
    } else if (*import_idx) {
      nk::data::import_idx(idx);
    } else if (*import_csv) {
      nk::data::import_csv(csv);
    } else if (*export_verb) {
      nk::data::export_dataset(exporting);
    } else if (*info_verb) {
      nk::data::info(info);
    } else if (*merge) {
      nk::data::merge(merging);
    }
  });
}
