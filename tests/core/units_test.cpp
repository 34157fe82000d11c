#include "../prelude.hpp"

TEST_CASE("Batch and Epoch periods follow Determined's should_stop") {
  dtl::Batch every5{5};
  CHECK(every5.should_stop(5));
  CHECK(every5.should_stop(10));
  CHECK_FALSE(every5.should_stop(7));
  dtl::Batch always{0};  // any value < 1 fires every time
  CHECK(always.should_stop(1));
  CHECK(always.should_stop(2));
  dtl::Batch sched{{7, 3}};
  CHECK(sched.is_schedule());
  CHECK(sched.should_stop(3));
  CHECK(sched.should_stop(7));
  CHECK_FALSE(sched.should_stop(6));
  CHECK(dtl::Batch::never().is_never());
  // Regression: Batch{10} is the period 10, never the one-element schedule {10}.
  CHECK_FALSE(dtl::Batch{10}.is_schedule());
  CHECK(dtl::Batch{10}.should_stop(20));
  CHECK_FALSE(dtl::Batch::never().should_stop(1000000));
}

TEST_CASE("Length keeps its unit and fires epoch units only at an epoch's end") {
  dtl::Length b = dtl::Batch{10};
  dtl::Length e = dtl::Epoch{2};
  CHECK(b.is_batches());
  CHECK(e.is_epochs());
  CHECK(b.to_string() == "batches=10");
  CHECK(b.fires(10, 1, false));
  CHECK_FALSE(e.fires(10, 2, false));
  CHECK(e.fires(10, 2, true));
  CHECK_FALSE(e.fires(10, 1, true));
  static_assert(!std::is_convertible_v<dtl::Batch, dtl::Epoch>);
  static_assert(!std::is_convertible_v<dtl::Epoch, dtl::Batch>);
}
