// The exported plan calls: create, destroy, workspace size, describe.
#include <memory>

#include "src/error.h"
#include "src/plan.h"
#include "src/structs.h"

extern "C" {

GGEMM_API ggemm_status_t ggemm_plan_create(ggemm_plan_t* plan, const ggemm_plan_desc* desc) {
    return ggemm::guarded("ggemm_plan_create", [&] {
        if (plan == nullptr) {
            return ggemm::fail(GGEMM_ERROR_NULL_ARGUMENT,
                               "plan is NULL: pass the address of a ggemm_plan_t to receive the plan");
        }
        *plan = nullptr;
        ggemm_plan_desc checked;
        ggemm_status_t status = ggemm::read_plan_desc(desc, "desc", &checked);
        if (status != GGEMM_SUCCESS) return status;
        std::unique_ptr<ggemm_plan> created;
        status = ggemm::create_plan(checked, &created);
        if (status == GGEMM_SUCCESS) *plan = created.release();
        return status;
    });
}

GGEMM_API ggemm_status_t ggemm_plan_destroy(ggemm_plan_t plan) {
    return ggemm::guarded("ggemm_plan_destroy", [&] {
        delete plan;  // NULL is a no-op, as free()
        return GGEMM_SUCCESS;
    });
}

GGEMM_API ggemm_status_t ggemm_plan_workspace_size(ggemm_plan_t plan, uint64_t* bytes) {
    return ggemm::guarded("ggemm_plan_workspace_size", [&] {
        if (plan == nullptr) return ggemm::fail(GGEMM_ERROR_NULL_ARGUMENT, "plan is NULL");
        if (bytes == nullptr) return ggemm::fail(GGEMM_ERROR_NULL_ARGUMENT, "bytes is NULL");
        *bytes = plan->workspace_bytes;
        return GGEMM_SUCCESS;
    });
}

GGEMM_API ggemm_status_t ggemm_plan_describe(ggemm_plan_t plan, char* buffer, uint64_t buffer_size,
                                             uint64_t* required) {
    return ggemm::guarded("ggemm_plan_describe", [&] {
        if (plan == nullptr) return ggemm::fail(GGEMM_ERROR_NULL_ARGUMENT, "plan is NULL");
        return ggemm::copy_text(plan->description.c_str(), buffer, buffer_size, required,
                                "ggemm_plan_describe");
    });
}

}  // extern "C"
