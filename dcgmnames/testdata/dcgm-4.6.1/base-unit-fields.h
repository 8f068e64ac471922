/**
 * Base unit field IDs (1600-1799).
 *
 * Fields in this range replace legacy fields defined above that do not conform
 * to the DCGM field naming and measurement standard (see dcgm_field_naming.py).
 * Specifically, each entry replaces a legacy field that uses a non-base unit.
 * Those legacy fields are retained for backward compatibility.
 *
 * Fields in this range are in the same order as their legacy counterparts.
 */

/**
 * Total BAR1 capacity of the GPU in bytes
 */
#define DCGM_FI_DEV_BAR1_CAPACITY_BYTES 1600

/**
 * Used BAR1 of the GPU in bytes
 */
#define DCGM_FI_DEV_BAR1_USED_BYTES 1601

/**
 * Free BAR1 of the GPU in bytes
 */
#define DCGM_FI_DEV_BAR1_FREE_BYTES 1602

/**
 * SM clock for the device in hertz
 */
#define DCGM_FI_DEV_SM_CLOCK_HERTZ 1603

/**
 * Memory clock for the device in hertz
 */
#define DCGM_FI_DEV_MEMORY_CLOCK_HERTZ 1604

/**
 * Video encoder/decoder clock for the device in hertz
 */
#define DCGM_FI_DEV_VIDEO_CLOCK_HERTZ 1605

/**
 * SM application clock target for the device in hertz
 */
#define DCGM_FI_DEV_SM_APP_CLOCK_HERTZ 1606

/**
 * Memory application clock target for the device in hertz
 */
#define DCGM_FI_DEV_MEMORY_APP_CLOCK_HERTZ 1607

/**
 * Maximum supported SM clock for the device in hertz
 */
#define DCGM_FI_DEV_SM_MAX_CLOCK_HERTZ 1608

/**
 * Maximum supported memory clock for the device in hertz
 */
#define DCGM_FI_DEV_MEMORY_MAX_CLOCK_HERTZ 1609

/**
 * Maximum supported video encoder/decoder clock for the device in hertz
 */
#define DCGM_FI_DEV_VIDEO_MAX_CLOCK_HERTZ 1610

/**
 * Total GPU energy consumption in joules since the driver was last reloaded
 */
#define DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL 1611

/**
 * Fan speed for the device as a ratio of maximum noise-tolerance fan speed (0.0-1.0+)
 */
#define DCGM_FI_DEV_FAN_SPEED_RATIO 1612
