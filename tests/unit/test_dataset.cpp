// test_dataset.cpp - nk::data::Source: nk-data layouts, image files, item and
// range reads, and every refusal (exit 3 with the file and dataset named).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <numeric>

#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/image.hpp"
#include "test_support.hpp"

namespace data = nk::data;
namespace h5 = nk::h5;

namespace {

/// The message of the nk::Error that 'body' throws ("" if none); 'code' gets its exit code.
std::string error_of(const std::function<void()>& body, nk::Exit* code = nullptr) {
  try {
    body();
  } catch (const nk::Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  if (code) *code = nk::Exit::ok;
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<float> ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i % 97) / 96.0f;
  return v;
}

/// An nk-data images file: /images [n,h,w,c] (rank 3 when c == 0) and, if label_count >= 0, /labels.
void write_images(const std::string& path, int64_t n, int64_t h, int64_t w, int64_t c, int64_t label_count = -1) {
  h5::Writer out(path, "nk-data.images/1");
  const std::vector<float> pixels = ramp(n * h * w * std::max<int64_t>(c, 1));
  if (c > 0)
    out.write("/images", pixels.data(), {n, h, w, c}, "N,H,W,C");
  else
    out.write("/images", pixels.data(), {n, h, w}, "N,H,W");
  if (label_count >= 0) {
    std::vector<int64_t> labels(static_cast<size_t>(label_count));
    for (int64_t i = 0; i < label_count; ++i) labels[static_cast<size_t>(i)] = i % 3;
    out.write("/labels", labels.data(), {label_count}, "N");
  }
  out.commit();
}

/// A file as h5py writes it: no nk_schema, one float32 dataset (its data left unwritten when 'values' is null).
void write_plain(const std::string& path, const std::string& name, const std::vector<hsize_t>& dims,
                 const float* values) {
  h5::Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  REQUIRE(file.valid());
  h5::Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  if (!values) {
    const std::vector<hsize_t> chunk(dims.size(), 1);
    H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
  }
  h5::Handle ds(
      H5Dcreate2(file.get(), name.c_str(), H5T_NATIVE_FLOAT, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  REQUIRE(ds.valid());
  if (values) REQUIRE(H5Dwrite(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0);
}

}  // namespace

TEST_SUITE("dataset") {
  TEST_CASE("images [N,H,W,C] with labels: item, range and whole reads agree") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("stack.h5");
    write_images(path, 5, 4, 3, 3, 5);
    const data::Source s = data::Source::open(path);
    CHECK(s.images());
    CHECK_FALSE(s.image_file());
    CHECK(s.dataset() == "/images");
    CHECK(s.count() == 5);
    CHECK(s.item_shape() == std::vector<int64_t>{4, 3, 3});
    CHECK(s.item_values() == 36);
    REQUIRE(s.has_labels());
    CHECK(s.labels() == std::vector<int64_t>{0, 1, 2, 0, 1});
    CHECK(s.classes() == 3);
    const h5::Array<float> all = s.read_all();
    CHECK(all.shape == std::vector<int64_t>{5, 4, 3, 3});
    CHECK(all.data == ramp(5 * 36));
    const h5::Array<float> range = s.read(1, 3);
    CHECK(range.shape == std::vector<int64_t>{2, 4, 3, 3});
    CHECK(std::equal(range.data.begin(), range.data.end(), all.data.begin() + 36));
    const h5::Array<float> item = s.read_item(4);
    CHECK(item.shape == std::vector<int64_t>{4, 3, 3});
    CHECK(std::equal(item.data.begin(), item.data.end(), all.data.begin() + 4 * 36));
    const nk::Image image = s.read_image(2);
    CHECK((image.height == 4 && image.width == 3 && image.channels == 3));
    CHECK(image.pixels[0] == all.data[2 * 36]);
    CHECK(s.read(2, 2).data.empty());
  }

  TEST_CASE("images [N,H,W] read as C = 1; vectors [N,D]; labels optional, ignored on request") {
    nk::test::ScratchDir dir;
    const std::string gray = dir.file("gray.h5");
    write_images(gray, 3, 2, 5, 0);
    const data::Source g = data::Source::open(gray);
    CHECK(g.item_shape() == std::vector<int64_t>{2, 5, 1});
    CHECK(g.read_item(1).shape == std::vector<int64_t>{2, 5, 1});
    CHECK(g.read(0, 3).shape == std::vector<int64_t>{3, 2, 5, 1});
    CHECK_FALSE(g.has_labels());
    CHECK(g.classes() == 0);

    const std::string vec = dir.file("vec.h5");
    {
      h5::Writer out(vec, "nk-data.vectors/1");
      const std::vector<double> v{1, 2, 3, 4, 5, 6};
      out.write("/vectors", v.data(), {2, 3}, "N,D");
      const std::vector<float> labels{0.5f, 1.5f};  // ignored below
      out.write("/labels", labels.data(), {2}, "N");
      out.commit();
    }
    data::Options ignore;
    ignore.labels = data::Labels::ignore;
    const data::Source v = data::Source::open(vec, ignore);
    CHECK(v.kind() == data::Kind::vectors);
    CHECK(v.dataset() == "/vectors");
    CHECK(v.item_shape() == std::vector<int64_t>{3});
    CHECK((v.height() == 1 && v.width() == 3 && v.channels() == 1));
    CHECK(v.read_item(1).data == std::vector<float>{4, 5, 6});
    CHECK_FALSE(v.has_labels());
    CHECK(contains(error_of([&] { v.read_image(0); }), "not images"));
  }

  TEST_CASE("a file without nk_schema is accepted, another tool's file is not") {
    nk::test::ScratchDir dir;
    const std::vector<float> pixels = ramp(2 * 4 * 4);
    write_plain(dir.file("plain.h5"), "/images", {2, 4, 4, 1}, pixels.data());
    CHECK(data::Source::open(dir.file("plain.h5")).count() == 2);
    {
      h5::Writer out(dir.file("model.h5"), "spike-sft.model/1");
      out.write("/images", pixels.data(), {2, 4, 4, 1}, "N,H,W,C");
      out.commit();
    }
    nk::Exit code{};
    const std::string message = error_of([&] { data::Source::open(dir.file("model.h5")); }, &code);
    CHECK(code == nk::Exit::input);
    CHECK(contains(message, "model.h5"));
    CHECK(contains(message, "nk_schema is 'spike-sft.model/1', expected nk-data."));
  }

  TEST_CASE("a group of an open file (a spike-sft tasks file)") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("tasks.h5");
    {
      h5::Writer out(path, "spike-sft.tasks/1");
      const std::vector<float> pixels = ramp(4 * 2 * 2);
      out.write("/tasks/invert/train/images", pixels.data(), {4, 2, 2, 1}, "N,H,W,C");
      const std::vector<int32_t> labels{1, 0, 1, 3};
      out.write("/tasks/invert/train/labels", labels.data(), {4}, "N");
      out.commit();
    }
    const h5::File file = h5::File::open(path);
    data::Options options;
    options.group = "/tasks/invert/train";
    options.labels = data::Labels::required;
    const data::Source s = data::Source::open(file, options);
    CHECK(s.dataset() == "/tasks/invert/train/images");
    CHECK(s.labels() == std::vector<int64_t>{1, 0, 1, 3});
    CHECK(s.classes() == 4);
    options.group = "/tasks/invert/test";
    CHECK(contains(error_of([&] { data::Source::open(file, options); }),
                   "dataset /tasks/invert/test/images: missing (expected /images [N,H,W,C] or /vectors [N,D]"));
  }

  TEST_CASE("an image file is a one-item source, unless refused") {
    nk::test::ScratchDir dir;
    nk::Image image;
    image.width = 6, image.height = 4, image.channels = 3;
    image.pixels = ramp(6 * 4 * 3);
    const std::string png = dir.file("picture.png");
    nk::save_png(png, image);
    const data::Source s = data::Source::open(png);
    CHECK(s.image_file());
    CHECK(s.dataset().empty());
    CHECK(s.count() == 1);
    CHECK(s.item_shape() == std::vector<int64_t>{4, 6, 3});
    CHECK(s.read_item(0).data.size() == 72);
    CHECK(s.read(0, 1).shape == std::vector<int64_t>{1, 4, 6, 3});
    CHECK(s.read_image(0).width == 6);
    CHECK(contains(error_of([&] { s.read_item(1); }), "item 1 does not exist (N = 1)"));
    CHECK_FALSE(s.has_labels());

    data::Options hdf5_only;
    hdf5_only.image_files = false;
    CHECK(contains(error_of([&] { data::Source::open(png, hdf5_only); }), "not an HDF5 file"));
    data::Options labelled;
    labelled.labels = data::Labels::required;
    CHECK(contains(error_of([&] { data::Source::open(png, labelled); }), "has no labels"));
    data::Options gray_only;
    gray_only.channels = {1};
    CHECK(contains(error_of([&] { data::Source::open(png, gray_only); }), "expected C = 1 channels, found 3"));

    std::ofstream(dir.file("notes.txt")) << "hello\n";
    nk::Exit code{};
    CHECK(contains(error_of([&] { data::Source::open(dir.file("notes.txt")); }, &code), "notes.txt"));
    CHECK(code == nk::Exit::input);
    CHECK(contains(error_of([&] { data::Source::open(dir.file("absent.png")); }, &code), "absent.png"));
    CHECK(code == nk::Exit::io);
  }

  TEST_CASE("wrong rank, dtype, channels and sizes are exit 3 naming file and dataset") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("bad.h5");
    auto refuse = [&](const std::string& name, const std::vector<int64_t>& shape, const data::Options& options,
                      const std::string& expected, bool integer = false) {
      {
        h5::Writer out(path, "nk-data.images/1");
        int64_t n = 1;
        for (int64_t e : shape) n *= e;
        if (integer) {
          const std::vector<uint8_t> v(static_cast<size_t>(n), 1);
          out.write(name, v.data(), shape, "");
        } else {
          const std::vector<float> v(static_cast<size_t>(n), 0.5f);
          out.write(name, v.data(), shape, "");
        }
        out.commit();
      }
      nk::Exit code{};
      const std::string message = error_of([&] { data::Source::open(path, options); }, &code);
      CHECK_MESSAGE(code == nk::Exit::input, message);
      CHECK_MESSAGE(contains(message, "input '" + path + "': dataset " + name + ": " + expected), message);
    };
    const data::Options any;
    data::Options rgb_or_gray;
    rgb_or_gray.channels = {1, 3};
    refuse("/images", {4, 5}, any, "expected rank 3 [N,H,W] or 4 [N,H,W,C], found rank 2 [4,5]");
    refuse("/images", {1, 2, 2, 2, 1}, any, "expected rank 3 [N,H,W] or 4 [N,H,W,C], found rank 5");
    refuse("/vectors", {2, 3, 4}, any, "expected rank 2 [N,D], found rank 3 [2,3,4]");
    refuse("/images", {2, 4, 4, 1}, any, "expected floating-point data, found uint8", true);
    refuse("/images", {1, 8, 8, 2}, rgb_or_gray, "expected C = 1 or 3 channels, found 2");
    refuse("/images", {1, 0, 8, 3}, any, "images of zero size [1,0,8,3]");
    refuse("/images", {0, 8, 8, 1}, any, "holds no items (N = 0)");
    refuse("/vectors", {3, 0}, any, "vectors of length 0");
    data::Options bounded;
    bounded.max_side = 16;
    refuse("/images", {1, 8, 17, 1}, bounded, "images of [1,8,17,1] exceed 16 pixels a side: refused before reading");
    data::Options images_only;
    images_only.vectors = false;
    {
      h5::Writer out(path, "nk-data.vectors/1");
      const std::vector<float> v(6, 0.5f);
      out.write("/vectors", v.data(), {2, 3}, "N,D");
      out.commit();
    }
    CHECK(contains(error_of([&] { data::Source::open(path, images_only); }),
                   "dataset /images: missing (expected /images [N,H,W,C], as nk-data writes)"));
  }

  TEST_CASE("missing datasets") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("other.h5");
    {
      h5::Writer out(path, "nk-data.images/1");
      const std::vector<float> v{1, 2};
      out.write("/pixels", v.data(), {2}, "N");
      out.commit();
    }
    CHECK(error_of([&] { data::Source::open(path); }) ==
          "input '" + path +
              "': dataset /images: missing (expected /images [N,H,W,C] or /vectors [N,D], as nk-data writes)");
    const std::string unlabelled = dir.file("unlabelled.h5");
    write_images(unlabelled, 2, 2, 2, 1);
    data::Options labelled;
    labelled.labels = data::Labels::required;
    CHECK(error_of([&] { data::Source::open(unlabelled, labelled); }) ==
          "input '" + unlabelled + "': dataset /labels: missing (a labelled file is needed)");
  }

  TEST_CASE("labels of the wrong length, type, rank or value") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("x.h5");
    write_images(path, 10, 2, 2, 1, 9);
    nk::Exit code{};
    CHECK(error_of([&] { data::Source::open(path); }, &code) ==
          "input '" + path + "': dataset /labels: has 9 entries, /images has 10");
    CHECK(code == nk::Exit::input);
    data::Options ignore;
    ignore.labels = data::Labels::ignore;
    CHECK(data::Source::open(path, ignore).count() == 10);

    auto with_labels = [&](auto values, std::vector<int64_t> shape) {
      h5::Writer out(path, "nk-data.images/1");
      const std::vector<float> pixels = ramp(3 * 4);
      out.write("/images", pixels.data(), {3, 2, 2, 1}, "N,H,W,C");
      out.write("/labels", values.data(), shape, "N");
      out.commit();
    };
    with_labels(std::vector<float>{0, 1, 2}, {3});
    CHECK(contains(error_of([&] { data::Source::open(path); }),
                   "dataset /labels: expected integer labels (class indices), found float32"));
    with_labels(std::vector<int64_t>{0, 1, 2}, {3, 1});
    CHECK(contains(error_of([&] { data::Source::open(path); }),
                   "dataset /labels: expected rank 1 [N], found rank 2 [3,1]"));
    with_labels(std::vector<int64_t>{0, -1, 2}, {3});
    CHECK(contains(error_of([&] { data::Source::open(path); }), "dataset /labels: entry 1 is -1 (labels are 0..C-1)"));
    with_labels(std::vector<int64_t>{0, 1, data::kMaxClasses}, {3});
    CHECK(contains(error_of([&] { data::Source::open(path); }), "entry 2 is 100000 (at most 100000 classes)"));
    with_labels(std::vector<uint8_t>{2, 7, 0}, {3});
    const data::Source s = data::Source::open(path);
    CHECK(s.labels() == std::vector<int64_t>{2, 7, 0});
    CHECK(s.classes() == 8);
  }

  TEST_CASE("NaN and Inf pixels are found by the read that meets them") {
    nk::test::ScratchDir dir;
    std::vector<float> pixels = ramp(3 * 4 * 4);
    pixels[1 * 16 + 2 * 4 + 3] = NAN;  // item 1, y 2, x 3 of [3,4,4]
    write_plain(dir.file("nan.h5"), "/images", {3, 4, 4}, pixels.data());
    const data::Source s = data::Source::open(dir.file("nan.h5"));
    CHECK(s.read_item(0).data.size() == 16);  // items before the NaN read fine
    nk::Exit code{};
    CHECK(error_of([&] { s.read_item(1); }, &code) ==
          "input '" + dir.file("nan.h5") + "': dataset /images: NaN at index [1,2,3]");
    CHECK(code == nk::Exit::input);
    CHECK(contains(error_of([&] { s.read_all(); }), "NaN at index [1,2,3]"));
    pixels[1 * 16 + 2 * 4 + 3] = 0;
    pixels[2 * 16] = -INFINITY;
    write_plain(dir.file("inf.h5"), "/vectors", {3, 16}, pixels.data());
    CHECK(contains(error_of([&] { data::Source::open(dir.file("inf.h5")).read(1, 3); }),
                   "dataset /vectors: Inf at index [2,0]"));
  }

  TEST_CASE("items outside the source, absurd sizes, truncated and empty files") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("small.h5");
    write_images(path, 3, 2, 2, 1);
    const data::Source s = data::Source::open(path);
    CHECK(contains(error_of([&] { s.read_item(3); }), "dataset /images: item 3 does not exist (N = 3)"));
    CHECK(contains(error_of([&] { s.read_item(-1); }), "item -1 does not exist"));
    CHECK(contains(error_of([&] { s.read(2, 5); }), "items [2,5) do not exist (N = 3)"));

    // Declared but never written: opening is cheap, reading is refused before allocating.
    write_plain(dir.file("huge.h5"), "/images", {2, 1 << 20, 1 << 20, 3}, nullptr);
    const data::Source huge = data::Source::open(dir.file("huge.h5"));
    CHECK(huge.count() == 2);
    nk::Exit code{};
    CHECK(contains(error_of([&] { huge.read_item(0); }, &code), "GiB of memory available"));
    CHECK(code == nk::Exit::input);
    write_plain(dir.file("overflow.h5"), "/vectors", {hsize_t{1} << 32, hsize_t{1} << 31}, nullptr);
    CHECK(contains(error_of([&] { data::Source::open(dir.file("overflow.h5")); }),
                   "holds more than 2^62 values: refused before reading"));

    const std::string stack = dir.file("stack.h5");
    write_images(stack, 40, 16, 16, 1, 40);
    std::ifstream in(stack, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string cut = dir.file("cut.h5");
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    const std::string message = error_of([&] { data::Source::open(cut).read_all(); }, &code);
    CHECK(code == nk::Exit::input);
    CHECK_MESSAGE(contains(message, "cut.h5"), message);

    std::ofstream(dir.file("empty.h5")).close();
    CHECK(contains(error_of([&] { data::Source::open(dir.file("empty.h5")); }, &code), "empty"));
    CHECK(code == nk::Exit::input);
  }
}
