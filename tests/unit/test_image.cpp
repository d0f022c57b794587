// test_image.cpp - PNG encode/decode, channel conversion, resize.
#include <doctest/doctest.h>

#include <cmath>

#include "nk/error.hpp"
#include "nk/image.hpp"

TEST_SUITE("image") {
  TEST_CASE("PNG round trip is exact to 8 bits, gray and RGB") {
    for (int channels : {1, 3}) {
      nk::Image image;
      image.width = 5;
      image.height = 3;
      image.channels = channels;
      for (int i = 0; i < 5 * 3 * channels; ++i) image.pixels.push_back(static_cast<float>(i % 17) / 16.0f);
      const nk::Image back = nk::decode_image(nk::encode_png(image), "memory");
      REQUIRE(back.width == 5);
      REQUIRE(back.height == 3);
      REQUIRE(back.channels == channels);
      for (size_t i = 0; i < image.pixels.size(); ++i) {
        CHECK(std::abs(back.pixels[i] - image.pixels[i]) <= 0.5f / 255.0f + 1e-6f);
      }
    }
  }

  TEST_CASE("channel conversion uses BT.601 luma") {
    nk::Image rgb;
    rgb.width = rgb.height = 1;
    rgb.channels = 3;
    rgb.pixels = {1.0f, 0.0f, 0.0f};
    CHECK(nk::convert_channels(rgb, 1).pixels[0] == doctest::Approx(0.299));
    const nk::Image gray = nk::convert_channels(nk::convert_channels(rgb, 1), 3);
    CHECK(gray.pixels[2] == doctest::Approx(0.299));
  }

  TEST_CASE("resize keeps a constant image constant") {
    nk::Image image;
    image.width = 10;
    image.height = 6;
    image.channels = 1;
    image.pixels.assign(60, 0.25f);
    const nk::Image small = nk::resize_image(image, 4, 3);
    CHECK(small.pixels.size() == 12);
    for (float v : small.pixels) CHECK(v == doctest::Approx(0.25f).epsilon(1e-4));
  }

  TEST_CASE("bytes that are not an image are invalid input") {
    const std::vector<unsigned char> text{'h', 'e', 'l', 'l', 'o'};
    CHECK_THROWS_AS(nk::decode_image(text, "hello.png"), nk::Error);
    CHECK_THROWS_AS(nk::decode_image({}, "empty.png"), nk::Error);
  }
}
